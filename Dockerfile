# hookgate gateway image: slim, non-root, bubblewrap for sandboxed hook programs, the web panel
# served by the gateway itself. Build: docker build -t hookgate:0.1.0 .
# Run one: docker run -p 8787:8787 -v hookgate-data:/var/lib/hookgate hookgate:0.1.0
# Many: deploy/compose.yaml or deploy/k8s/ (see docs/deploy.md).

# 3.11: the Python the test suite runs on, with wheels for every dependency.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# One wheel of hookgate (panel files included) and of every dependency, Redis client too.
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[redis]"

FROM python:3.11-slim
# bubblewrap: command and process hooks run in their own namespaces (--hook-sandbox auto).
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/hookgate --create-home hookgate
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels

USER 10001:10001
WORKDIR /var/lib/hookgate
# Listen on every interface inside the container (a proxy or the load balancer is in front);
# SQLite data in the volume unless HOOKGATE_DATABASE_URL names PostgreSQL.
ENV HOOKGATE_HOST=0.0.0.0 \
    HOOKGATE_PORT=8787 \
    HOOKGATE_DATA_DIR=/var/lib/hookgate \
    PYTHONUNBUFFERED=1
EXPOSE 8787
VOLUME ["/var/lib/hookgate"]
# Liveness; orchestrators should route on /readyz (database, Redis, migrations, not draining).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/healthz', timeout=2)"]
# SIGTERM drains: readiness 503, new work refused, requests in flight answered, then exit.
STOPSIGNAL SIGTERM
ENTRYPOINT ["hookgate"]
CMD ["serve", "--log-format", "json"]
