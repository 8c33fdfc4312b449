# hookgate's per-event relay for Claude Code, Codex CLI and Gemini CLI: bash builtins only.
#
# The installed hook command is
#   /bin/bash -p THIS_FILE 1 ID LIMIT FOLDER HOOKGATE AGENT [--config FILE | --gateway URL]
# 1 is the form of these arguments (a command installed for another form is refused), ID names the warm process's endpoint file (one per hookgate install), LIMIT is how many
# seconds the warm process may take to answer (below the agent's own hook timeout, after
# which Codex and Gemini let the action run), FOLDER is the warm process's folder as it was
# when the command was installed (never taken from the event's environment, which a
# project's settings can set), HOOKGATE is hookgate's executable and AGENT one of
# claude-code, codex, gemini. It starts no process: it reads the endpoint file (the port
# and two tokens of the user's warm process, see shell_relay.py), connects to 127.0.0.1 with
# bash's /dev/tcp, checks that the listener knows the server token before it sends a byte,
# sends the client token, its pid (the warm process reads the environment, working folder and
# umask from /proc), the options and the input, and prints the answer.
#
# Failure rules (the same as the Python relay's, relay.py):
# * nothing was handed over yet (no endpoint, a file that is not the user's own, refused,
#   a listener that does not know the token, the warm process refused the event): the
#   event goes to `HOOKGATE AGENT OPTIONS` (the Python relay: the warm process over its Unix
#   socket, started if need be, or the event in its own process), with the input it read;
# * the warm process took the event and then failed (closed, garbage, over LIMIT): the
#   hooks may have run, so they never run again; the Python relay is told so
#   (HOOKGATE_RELAY_FAILED) and answers with hookgate's failure in the agent's own form.
# HOOKGATE_SHELL_RELAY=require turns the first kind into the second (tests, benchmarks).

form=$1 id=$2 limit=$3 folder=$4 hookgate=$5 agent=$6
shift 6
options=("$@")
input= have_input=
# Bash must survive writing to a listener that went away (SIGPIPE would end it with a code
# the agents take for "go ahead"), and an exec that fails (exit 126 or 127 is one too);
# what it starts gets SIGPIPE's default back.
trap '' PIPE
shopt -s execfail

last_resort() {  # hookgate cannot be run at all: the agent's "event unknown" deny
    local reason="hookgate: $1"
    reason=${reason//[^[:print:]]/ }
    reason=${reason//[\"\\]/}
    case $agent in
        codex) printf '{"decision": "block", "reason": "%s"}\n' "$reason" ;;
        gemini) printf '{"decision": "deny", "reason": "%s"}\n' "$reason" ;;
        *) printf '%s\n' "$reason" >&2; exit 2 ;;
    esac
    printf '%s\n' "$reason" >&2
    exit 0
}

fallback() {  # nothing ran: the Python relay answers the event
    exec 3>&-
    trap - PIPE
    [[ $HOOKGATE_SHELL_RELAY == require ]] \
        && failed "the shell relay did not reach the warm process ($1)"
    if [[ -n $have_input ]]; then
        exec "$hookgate" "$agent" "${options[@]}" <<<"$input"
    else
        exec "$hookgate" "$agent" "${options[@]}"
    fi
    last_resort "cannot run $hookgate"
}

failed() {  # the warm process may have run hooks: hookgate's failure, in the agent's form
    exec 3>&-
    trap - PIPE
    [[ -n $have_input ]] || IFS= read -r -d '' input
    HOOKGATE_RELAY_FAILED=$1 exec "$hookgate" "$agent" "${options[@]}" <<<"$input"
    last_resort "$1; and cannot run $hookgate"
}

now_us() { now=${EPOCHREALTIME//[!0-9]/}; }

field() {  # the next NUL-terminated field of the answer, into the variable named $1
    local left
    now_us
    left=$(( deadline - now ))
    (( left > 0 )) || failed "no answer within ${limit}s"
    printf -v left '%d.%06d' $(( left / 1000000 )) $(( left % 1000000 ))
    IFS= read -r -d '' -t "$left" -u 3 "$1" && return 0
    (( $? > 128 )) && failed "no answer within ${limit}s"
    [[ $1 == kind ]] && failed "the warm process closed the connection"
    failed "the warm process's answer was cut short"
}

[[ $form == 1 ]] || last_resort "this hook command was installed by another hookgate version: install it again"
case ${HOOKGATE_CLAUDE_CODE_WARM,,} in off|0|no|false) fallback "turned off" ;; esac
[[ -z $HOOKGATE_GATEWAY_URL ]] || fallback "gateway"

endpoint=$folder/sh-$id
# Only the user's own files: another user's (a poisoned /tmp folder) or a symlink never
# decides where the input goes.
[[ -O $folder && ! -L $folder && -O $endpoint && ! -L $endpoint ]] || fallback "no endpoint"
read -r port server_token client_token <"$endpoint" || fallback "unreadable endpoint"
[[ $port =~ ^[0-9]+$ && ${#server_token} == 32 && ${#client_token} == 32 ]] \
    || fallback "bad endpoint"
{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || fallback "refused"
# The listener speaks first: a process that took the port after the warm process ended
# cannot, so it learns nothing of the event or the client token.
IFS= read -r -t 3 -u 3 greeting || fallback "no greeting"
[[ $greeting == "$server_token" ]] || fallback "not the warm process"

# The input: $(</dev/stdin) reads a pipe in blocks; Node's agents give a socket, which
# /dev/stdin cannot open, so read, a byte a call (cheap below a few KiB).
LC_ALL_WAS=${LC_ALL-_unset_}
LC_ALL=C
{ input=$(</dev/stdin); } 2>/dev/null || IFS= read -r -d '' input
have_input=1
if [[ $LC_ALL_WAS == _unset_ ]]; then unset LC_ALL; else LC_ALL=$LC_ALL_WAS; fi

now_us
deadline=$(( now + limit * 1000000 ))
printf '%s\0' "$client_token" "$$" "$agent" "${#options[@]}" "${options[@]}" "$input" >&3 \
    2>/dev/null || failed "the warm process closed the connection"
field kind
[[ $kind == R ]] && fallback "refused the event"
[[ $kind == X ]] || failed "the warm process answered something else"
field code
[[ $code =~ ^[0-9]{1,3}$ ]] && (( code <= 255 )) \
    || failed "the warm process answered something else"
field out
field err
exec 3>&-
[[ -z $out ]] || printf '%s' "$out"
[[ -z $err ]] || printf '%s' "$err" >&2
exit "$code"
