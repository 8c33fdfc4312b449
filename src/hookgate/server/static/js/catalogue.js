// Event catalogue and sample inputs. The gateway's connect payload may send its own catalogue
// (`events`); this copy of hookgate's is the fallback and the source of sample events.

const FALLBACK_EVENTS = [
  ["session_start", false, null, "source"],
  ["user_prompt_submit", true, "prompt", null],
  ["pre_tool_use", true, "tool_input", "tool_name"],
  ["post_tool_use", false, "tool_response", "tool_name"],
  ["stop", false, null, null],
  ["subagent_start", true, "task", "target_agent"],
  ["subagent_stop", false, null, "target_agent"],
  ["before_llm", true, "request", null],
  ["after_llm", true, "response", null],
  ["approve_tool", true, null, "tool_name"],
  ["session_end", false, null, null],
  ["before_agent_start", true, "prompt", null],
  ["message_received", false, null, null],
  ["message_sending", true, "content", null],
  ["message_sent", false, null, null],
  ["tool_result_persist", true, "message", "tool_name"],
  ["before_prompt_build", false, null, null],
  ["before_message_write", true, "message", null],
  ["bootstrap", true, "bootstrap_files", null],
  ["agent_end", false, null, null],
  ["llm_input", false, null, null],
  ["llm_output", false, null, null],
  ["notification", false, null, "notification_type"],
  ["post_tool_use_failure", false, null, "tool_name"],
].map(([name, blocking, input_field, match_field]) => ({
  name,
  blocking,
  input_field,
  match_field,
}));

export const HANDLER_TYPES = ["command", "http", "prompt", "agent", "process"];

let events = FALLBACK_EVENTS;

/** Adopt the gateway's catalogue when its connect payload carries one. */
export function useCatalogue(serverEvents) {
  if (Array.isArray(serverEvents) && serverEvents.length && serverEvents[0].name) {
    events = serverEvents.map((e) => ({
      name: e.name,
      blocking: Boolean(e.blocking),
      input_field: e.input_field ?? null,
      match_field: e.match_field ?? null,
    }));
  }
}

export function allEvents() {
  return events;
}

export function eventSpec(name) {
  return (
    events.find((e) => e.name === name) || {
      name,
      blocking: true,
      input_field: null,
      match_field: null,
    }
  );
}

/** Tools offered by the test panel's picker, each with an input a real agent would send. */
export const SAMPLE_TOOLS = {
  exec: { cmd: "ls -la /workspace" },
  shell: { command: "rm -rf /tmp/build && make" },
  write_file: { path: "/workspace/notes.md", content: "Call me at 555-0100 or me@example.com" },
  read_file: { path: "/etc/passwd" },
  edit_file: { path: "src/app.py", old_string: "DEBUG = True", new_string: "DEBUG = False" },
  web_fetch: { url: "https://example.com/docs" },
  web_search: { query: "hookgate lifecycle hooks" },
  delegate: { agent: "reviewer", task: "Review the last diff" },
};

/** A sensible sample event for `eventName` (and `tool` for tool events). */
export function sampleEvent(eventName, tool = "exec") {
  const spec = eventSpec(eventName);
  const base = { session_id: "panel-test" };
  if (spec.match_field === "tool_name") {
    const sample = { ...base, tool_name: tool, tool_input: SAMPLE_TOOLS[tool] || {} };
    if (eventName === "post_tool_use") sample.tool_response = { ok: true, output: "done" };
    if (eventName === "tool_result_persist") sample.message = { role: "tool", content: "done" };
    if (eventName === "post_tool_use_failure") sample.error = "exit status 1";
    return sample;
  }
  switch (spec.input_field) {
    case "prompt":
      return { ...base, prompt: "Summarise README.md and email it to me@example.com" };
    case "task":
      return { ...base, source_agent: "lead", target_agent: "coder", task: "Fix the failing test" };
    case "request":
      return { ...base, request: { model: "haiku", messages: [{ role: "user", content: "hi" }] } };
    case "response":
      return { ...base, request: { model: "haiku" }, response: { content: "Hello!" } };
    case "content":
      return { ...base, channel: "chat", to: "user-1", content: "Your build passed." };
    default:
      break;
  }
  if (eventName === "subagent_stop") {
    return {
      ...base,
      source_agent: "lead",
      target_agent: "coder",
      task: "Fix the failing test",
      output: "Fixed test_parse by handling empty input.",
    };
  }
  if (eventName === "stop") return { ...base, last_message: "All done.", stop_reason: "end_turn" };
  if (eventName === "session_start") return { ...base, source: "startup", model: "haiku" };
  return base;
}
