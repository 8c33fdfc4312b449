def no_push(event):
    if str(event.get("tool_input", {}).get("cmd", "")).startswith("git push"):
        return {"decision": "block", "reason": "no pushes from agents"}
    return None
