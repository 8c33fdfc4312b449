// The gateway client: request/response frames over one WebSocket, as the seed defines them.
//   request  {"type":"req","id","method","params"}
//   response {"type":"res","id","ok":true,"payload"} | {"type":"res","id","ok":false,"error":{…}}
// The browser cannot set Authorization on the upgrade, so the API key travels in a first
// `connect` request; its payload (role, tenant, edition, …) drives what the panel shows.

export class GatewayError extends Error {
  constructor(code, message, details = null) {
    super(message || code);
    this.name = "GatewayError";
    this.code = code || "ERROR";
    this.details = details;
  }
}

const DEFAULT_TIMEOUT_MS = 30000;

export function defaultSocketUrl(location = window.location) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws`;
}

export class Gateway {
  constructor(url = defaultSocketUrl()) {
    this.url = url;
    this.socket = null;
    this.pending = new Map();
    this.nextId = 1;
    this.hello = null;
    this.onclose = null; // called with a GatewayError when an established socket drops
  }

  /** Open the socket and sign in; resolves with the connect payload. */
  async connect(apiKey) {
    this.close();
    const socket = new WebSocket(this.url);
    this.socket = socket;
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener(
        "error",
        () => reject(new GatewayError("UNREACHABLE", `cannot reach the gateway at ${this.url}`)),
        { once: true },
      );
    });
    socket.addEventListener("message", (msg) => this.#receive(msg.data));
    socket.addEventListener("close", (ev) => this.#closed(socket, ev));
    try {
      this.hello = (await this.call("connect", { apiKey })) || {};
    } catch (err) {
      this.close();
      throw err;
    }
    return this.hello;
  }

  get connected() {
    return this.socket !== null && this.socket.readyState === WebSocket.OPEN;
  }

  /** Send one request; resolves with its payload or rejects with a GatewayError. */
  call(method, params = {}, { timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
    if (!this.connected) {
      return Promise.reject(new GatewayError("DISCONNECTED", "not connected to the gateway"));
    }
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new GatewayError("TIMEOUT", `${method} got no answer in ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer, method });
      this.socket.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }

  close() {
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close(1000, "client closed");
    this.#failPending(new GatewayError("DISCONNECTED", "connection closed"));
  }

  #receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return; // not ours to answer; the server never sends non-JSON frames on purpose
    }
    if (!frame || frame.type !== "res") return; // events are not used by the panel
    const entry = this.pending.get(String(frame.id));
    if (!entry) return;
    this.pending.delete(String(frame.id));
    clearTimeout(entry.timer);
    if (frame.ok) {
      entry.resolve(frame.payload ?? {});
    } else {
      const err = frame.error || {};
      entry.reject(new GatewayError(err.code, err.message, err.details ?? null));
    }
  }

  #closed(socket, event) {
    if (socket !== this.socket) return; // a socket we already replaced or closed
    this.socket = null;
    const reason = event.reason ? `: ${event.reason}` : "";
    const err = new GatewayError("DISCONNECTED", `connection to the gateway lost${reason}`);
    this.#failPending(err);
    if (this.onclose) this.onclose(err);
  }

  #failPending(err) {
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer);
      entry.reject(err);
    }
    this.pending.clear();
  }
}
