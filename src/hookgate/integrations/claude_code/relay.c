/* hookgate's per-event relay for Claude Code, Codex CLI and Gemini CLI, compiled.
 *
 * The same program as relay.bash (read its header: the arguments, the protocol and the two
 * failure rules are the same, and shell_relay.py holds both ends' facts), built by
 * `hookgate <agent> install` with the system's C compiler beside relay.bash
 * (compiled_relay.py), because starting bash and reading a script costs about as much again
 * as a bare hook. The installed command is this binary and its arguments, nothing else.
 *
 *   RELAY 1 ID LIMIT FOLDER HOOKGATE AGENT [OPTIONS...]
 *
 * Nothing here decides anything: it moves the event to the warm process and its answer back,
 * or hands the event to `HOOKGATE AGENT OPTIONS` (the Python relay), which answers it alone or
 * with hookgate's failure (HOOKGATE_RELAY_FAILED) in the agent's own form. Every path ends in
 * an answer the agent reads as a deny unless the warm process said otherwise: never an exit
 * code the agents take for "go ahead" (1, 126, 127, a signal).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_LEN 32
#define GREETING_MS 3000
#define ANSWER_FIELDS 4 /* kind, exit code, stdout, stderr */

struct buffer {
    char *data;
    size_t len, cap;
};

static const char *agent = "claude-code";
static const char *hookgate = "hookgate";
static char **options; /* argv from HOOKGATE on: HOOKGATE AGENT OPTIONS... NULL */
static int conn = -1;
static struct buffer input;
static int have_input;

/* hookgate cannot be run at all: the agent's "event unknown" deny, printed without
 * anything that could break the JSON around it */
static void last_resort(const char *message) {
    char reason[600];
    size_t n = 0;
    for (const char *p = "hookgate: "; *p; p++) reason[n++] = *p;
    for (const unsigned char *p = (const unsigned char *)message; *p && n < sizeof reason - 1;
         p++) {
        if (*p == '"' || *p == '\\') continue;
        reason[n++] = (*p >= 0x20 && *p < 0x7f) ? (char)*p : ' ';
    }
    reason[n] = '\0';
    if (strcmp(agent, "codex") == 0)
        printf("{\"decision\": \"block\", \"reason\": \"%s\"}\n", reason);
    else if (strcmp(agent, "gemini") == 0)
        printf("{\"decision\": \"deny\", \"reason\": \"%s\"}\n", reason);
    else {
        fprintf(stderr, "%s\n", reason);
        exit(2);
    }
    fflush(stdout);
    fprintf(stderr, "%s\n", reason);
    exit(0);
}

static int append(struct buffer *buf, const char *data, size_t len) {
    if (buf->cap - buf->len < len) {
        size_t cap = buf->cap ? buf->cap : 4096;
        while (cap - buf->len < len) {
            if (cap > ((size_t)-1) / 2) return -1;
            cap *= 2;
        }
        char *grown = realloc(buf->data, cap);
        if (!grown) return -1;
        buf->data = grown;
        buf->cap = cap;
    }
    if (len) memcpy(buf->data + buf->len, data, len);
    buf->len += len;
    return 0;
}

/* the whole of stdin (a pipe, a file or, from Node's agents, a socket) */
static int read_input(void) {
    char chunk[65536];
    for (;;) {
        ssize_t got = read(0, chunk, sizeof chunk);
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (append(&input, chunk, (size_t)got) < 0) return -1;
    }
    have_input = 1;
    return 0;
}

/* The Python relay, with the input already read as its stdin (a memory file: whatever its
 * size, no writer process is needed). Only returns when it cannot be started. */
static void exec_hookgate(void) {
    signal(SIGPIPE, SIG_DFL); /* an ignored signal stays ignored across exec */
    if (have_input) {
        int fd = memfd_create("hookgate-event", MFD_CLOEXEC);
        if (fd < 0) return;
        size_t done = 0;
        while (done < input.len) {
            ssize_t wrote = write(fd, input.data + done, input.len - done);
            if (wrote < 0 && errno == EINTR) continue;
            if (wrote <= 0) return;
            done += (size_t)wrote;
        }
        if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) return;
    }
    if (options) execv(hookgate, options);
}

/* the warm process may have run hooks: hookgate's failure, in the agent's form */
static void failed(const char *reason) {
    if (conn >= 0) close(conn);
    conn = -1;
    if (!have_input) read_input();
    char message[512];
    snprintf(message, sizeof message, "%s", reason);
    setenv("HOOKGATE_RELAY_FAILED", message, 1);
    exec_hookgate();
    char last[700];
    snprintf(last, sizeof last, "%s; and cannot run %s", message, hookgate);
    last_resort(last);
}

/* nothing ran: the Python relay answers the event */
static void fallback(const char *why) {
    if (conn >= 0) close(conn);
    conn = -1;
    const char *mode = getenv("HOOKGATE_SHELL_RELAY");
    if (mode && strcmp(mode, "require") == 0) {
        char reason[256];
        snprintf(reason, sizeof reason, "the shell relay did not reach the warm process (%s)",
                 why);
        failed(reason);
    }
    exec_hookgate();
    char last[600];
    snprintf(last, sizeof last, "cannot run %s", hookgate);
    last_resort(last);
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* wait until the connection can be read, up to `deadline`: 1 ready, 0 timed out */
static int readable(long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd fds = {.fd = conn, .events = POLLIN};
        int ready = poll(&fds, 1, left > 60000 ? 60000 : (int)left);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR) return 1; /* the read that follows reports it */
    }
}

/* Only the user's own files decide where the event goes: not another user's (a poisoned
 * /tmp folder), not a symlink. */
static int own(const struct stat *st) { return st->st_uid == geteuid(); }

enum endpoint_found { ENDPOINT_OK, NO_ENDPOINT, UNREADABLE_ENDPOINT, BAD_ENDPOINT };

/* The warm process's Unix socket beside the endpoint file, when it is there and the user's
 * own: connected, or -1 (the relay then takes the loopback port). On it the kernel tells
 * the warm process who connected, and loopback TCP's cost per event is gone; the greeting
 * and the tokens are the same. */
static int unix_connection(const char *folder, const char *id) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(address.sun_path, sizeof address.sun_path, "%s/sh-%s.unix", folder,
                         id) >= sizeof address.sun_path)
        return -1;
    struct stat st;
    if (lstat(address.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode) || !own(&st)) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static enum endpoint_found read_endpoint(const char *folder, const char *id, int *port,
                                         char *server_token, char *client_token) {
    struct stat st;
    if (lstat(folder, &st) != 0 || S_ISLNK(st.st_mode) || !own(&st)) return NO_ENDPOINT;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/sh-%s", folder, id) >= sizeof path)
        return NO_ENDPOINT;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NO_ENDPOINT;
    char line[256];
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && own(&st) && S_ISREG(st.st_mode))
        got = read(fd, line, sizeof line - 1);
    close(fd);
    if (got <= 0) return UNREADABLE_ENDPOINT;
    line[got] = '\0';
    /* "PORT SERVER_TOKEN CLIENT_TOKEN\n" */
    char *save = NULL, *fields[3];
    char *token = strtok_r(line, " \n", &save);
    for (int i = 0; i < 3; i++) {
        if (!token) return BAD_ENDPOINT;
        fields[i] = token;
        token = strtok_r(NULL, " \n", &save);
    }
    size_t digits = strlen(fields[0]);
    if (digits == 0 || digits > 5 || strspn(fields[0], "0123456789") != digits)
        return BAD_ENDPOINT;
    *port = atoi(fields[0]);
    if (*port <= 0 || *port > 65535) return BAD_ENDPOINT;
    if (strlen(fields[1]) != TOKEN_LEN || strlen(fields[2]) != TOKEN_LEN) return BAD_ENDPOINT;
    memcpy(server_token, fields[1], TOKEN_LEN + 1);
    memcpy(client_token, fields[2], TOKEN_LEN + 1);
    return ENDPOINT_OK;
}

/* The listener speaks first: a process that took the port after the warm process ended
 * cannot, so it learns nothing of the event or the client token. */
static int greeted(const char *server_token) {
    char line[TOKEN_LEN + 2];
    size_t have = 0;
    long long deadline = now_ms() + GREETING_MS;
    while (have < sizeof line && !memchr(line, '\n', have)) {
        if (!readable(deadline)) return 0;
        ssize_t got = recv(conn, line + have, sizeof line - have, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        have += (size_t)got;
    }
    return have == TOKEN_LEN + 1 && line[TOKEN_LEN] == '\n' &&
           memcmp(line, server_token, TOKEN_LEN) == 0;
}

static int send_all(const char *data, size_t len) {
    while (len > 0) {
        ssize_t sent = send(conn, data, len, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return -1;
        data += sent;
        len -= (size_t)sent;
    }
    return 0;
}

static int add_field(struct buffer *request, const char *data, size_t len) {
    return append(request, data, len) < 0 || append(request, "", 1) < 0 ? -1 : 0;
}

/* The answer: kind, exit code, stdout and stderr, each NUL-terminated; `ends` gets where
 * each field's NUL is. Returns only with an X answer whole. */
static void read_answer(struct buffer *answer, size_t *ends, long long deadline,
                        long limit) {
    size_t fields = 0, scanned = 0;
    char timeout_reason[64];
    snprintf(timeout_reason, sizeof timeout_reason, "no answer within %lds", limit);
    while (fields < ANSWER_FIELDS) {
        if (!readable(deadline)) failed(timeout_reason);
        char chunk[65536];
        ssize_t got = recv(conn, chunk, sizeof chunk, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            failed(fields == 0 ? "the warm process closed the connection"
                               : "the warm process's answer was cut short");
        if (append(answer, chunk, (size_t)got) < 0) failed("the answer is too large");
        for (; scanned < answer->len && fields < ANSWER_FIELDS; scanned++)
            if (answer->data[scanned] == '\0') ends[fields++] = scanned;
        if (fields >= 1) {
            if (ends[0] == 1 && answer->data[0] == 'R') fallback("refused the event");
            if (ends[0] != 1 || answer->data[0] != 'X')
                failed("the warm process answered something else");
        }
    }
}

int main(int argc, char **argv) {
    if (argc >= 7) agent = argv[6];
    /* installed in Claude Code's exec form, by a Claude Code that ignores "args" */
    if (argc == 1)
        last_resort("the relay was started without its arguments: this Claude Code does not "
                    "run exec-form hooks (command and args); update it");
    if (argc < 7 || strcmp(argv[1], "1") != 0)
        last_resort("this hook command was installed by another hookgate version: "
                    "install it again");
    signal(SIGPIPE, SIG_IGN);
    const char *id = argv[2], *folder = argv[4];
    hookgate = argv[5];
    options = argv + 5;
    long limit = strtol(argv[3], NULL, 10);
    if (limit < 1 || limit > 86400) limit = 1;

    const char *warm = getenv("HOOKGATE_CLAUDE_CODE_WARM");
    if (warm && (strcasecmp(warm, "off") == 0 || strcmp(warm, "0") == 0 ||
                 strcasecmp(warm, "no") == 0 || strcasecmp(warm, "false") == 0))
        fallback("turned off");
    const char *gateway = getenv("HOOKGATE_GATEWAY_URL");
    if (gateway && *gateway) fallback("gateway");

    int port = 0;
    char server_token[TOKEN_LEN + 1], client_token[TOKEN_LEN + 1];
    switch (read_endpoint(folder, id, &port, server_token, client_token)) {
    case ENDPOINT_OK: break;
    case NO_ENDPOINT: fallback("no endpoint"); break;
    case UNREADABLE_ENDPOINT: fallback("unreadable endpoint"); break;
    case BAD_ENDPOINT: fallback("bad endpoint"); break;
    }

    conn = unix_connection(folder, id);
    if (conn < 0) {
        conn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in address = {.sin_family = AF_INET,
                                      .sin_port = htons((uint16_t)port)};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (conn < 0 || connect(conn, (struct sockaddr *)&address, sizeof address) != 0)
            fallback("refused");
        int on = 1;
        setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    if (!greeted(server_token)) fallback("not the warm process");

    if (read_input() < 0) fallback("cannot read the event");
    /* the request's fields end in NUL: an input holding one is the Python relay's */
    if (input.len && memchr(input.data, '\0', input.len)) fallback("a NUL byte in the input");

    long long deadline = now_ms() + limit * 1000;
    struct buffer request = {0};
    char number[32];
    int bad = add_field(&request, client_token, TOKEN_LEN);
    snprintf(number, sizeof number, "%d", (int)getpid());
    bad |= add_field(&request, number, strlen(number));
    bad |= add_field(&request, agent, strlen(agent));
    snprintf(number, sizeof number, "%d", argc - 7);
    bad |= add_field(&request, number, strlen(number));
    for (int i = 7; i < argc; i++) bad |= add_field(&request, argv[i], strlen(argv[i]));
    bad |= add_field(&request, input.data ? input.data : "", input.len);
    if (bad || send_all(request.data, request.len) < 0)
        failed("the warm process closed the connection");
    free(request.data);

    struct buffer answer = {0};
    size_t ends[ANSWER_FIELDS];
    read_answer(&answer, ends, deadline, limit);
    close(conn);
    conn = -1;
    const char *code_text = answer.data + ends[0] + 1;
    size_t code_len = ends[1] - ends[0] - 1;
    if (code_len < 1 || code_len > 3 || strspn(code_text, "0123456789") != code_len)
        failed("the warm process answered something else");
    int code = atoi(code_text);
    if (code > 255) failed("the warm process answered something else");
    size_t out_len = ends[2] - ends[1] - 1, err_len = ends[3] - ends[2] - 1;
    if (out_len) fwrite(answer.data + ends[1] + 1, 1, out_len, stdout);
    fflush(stdout);
    if (err_len) fwrite(answer.data + ends[2] + 1, 1, err_len, stderr);
    fflush(stderr);
    return code;
}
