"""Texts the strategies put into requests.

Two kinds, kept apart on purpose:

- `LITERAL_*`: short strings a harness inserts into the model's context word for word (a
  placeholder for a cleared result, the line that introduces a summary). They are the behaviour
  being simulated, so they are reproduced exactly, each with its source.
- `*_INSTRUCTION`: summary prompts. A replay needs them only for their size (they are the tail of
  the summarizer request), so these are this project's own wording, written to the same
  sections, and to the harness prompt's length where the research gives it (Claude Code, pi).
"""

from __future__ import annotations

# --- literal strings (as the harnesses insert them) -------------------------------------------

LITERAL_CLEARED = "[Old tool result content cleared]"
"""opencode message-v2.ts (pruned part); Claude Code microcompact (UNVERIFIED); OpenClaw
hard-clear."""

LITERAL_CODEX_SUMMARY_PREFIX = (
    "You are resuming an in-progress task after context compaction. Another language model "
    "produced a handoff summary. Treat the summary as authoritative for what is already done. "
    'Continue from the "Next steps" for the active task; do not re-open completed tasks or audit '
    "prior work unless the user explicitly asked. You also have access to the state of the tools "
    "that were used by that language model. Here is the summary:"
)
"""openai/codex core/templates/compact/summary_prefix.md @928a707f."""

LITERAL_CODEX_NO_SUMMARY = "(no summary available)"

LITERAL_OPENCODE_CONTINUE = (
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to "
    "proceed."
)
"""opencode synthetic user message after an automatic compaction."""

LITERAL_OPENCODE_COMPACTION_MARKER = "What did we do so far?"
"""The user message opencode sends for the compaction part it stores before the summary
(strategies.md l.105 gives the message but not its text). Recalled from opencode's
message-v2.ts, which renders a compaction part as this user text: UNVERIFIED."""

LITERAL_PI_SUMMARY = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n{summary}\n</summary>"
)
"""pi-mono coding-agent messages.ts (injected compaction summary, user role)."""

LITERAL_CLAUDE_CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. The "
    "summary below covers the earlier portion of the conversation."
)
"""Claude Code continuation message, first sentences (public extractions, UNVERIFIED)."""

LITERAL_OPENHANDS_MASKED = "<MASKED>"
LITERAL_OPENHANDS_BROWSER = "Visited URL {url}\nContent omitted"
LITERAL_OPENHANDS_NO_SUMMARY = "No events summarized"

LITERAL_SWE_OMITTED = "Old environment output: ({lines} lines omitted)"
"""SWE-agent history_processors.py LastNObservations."""

LITERAL_AIDER_PREFIX = "I spoke to you previously about a number of things.\n"
LITERAL_AIDER_OK = "Ok."

LITERAL_CLINE_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal "
    "context window length. The initial user task has been retained for continuity, while "
    "intermediate conversation history has been removed. Keep this in mind as you continue "
    "assisting the user. Pay special attention to the user's latest messages."
)
LITERAL_CLINE_DUP_READ = (
    "[[NOTE] This file read has been removed to save space in the context window. Refer to the "
    "latest file read for the most up to date version of this file.]"
)

LITERAL_GEMINI_ACK = "Got it. Thanks for the additional context!"
LITERAL_GEMINI_MASK = (
    "<tool_output_masked>\n{head}\n... [TRUNCATED] ...\n{tail}\n\nOutput too large. Full output "
    "available at: {path}\n</tool_output_masked>"
)

LITERAL_GOOSE_CONTINUATION = (
    "Your context was compacted. The previous message contains a summary of the conversation so "
    "far.\nDo not mention that you read a summary or that conversation summarization occurred.\n"
    "Continue calling tools as necessary to complete the task."
)
LITERAL_GOOSE_PAIR_PREFIX = "[Historical tool call summary]"

LITERAL_OPENCLAW_TRIM_NOTE = (
    "\n\n[Tool result trimmed: kept first {head} chars and last {tail} chars of {total} chars.]"
)
"""Seen only in ports of OpenClaw's pruner (UNVERIFIED)."""

# --- summary instructions (own wording, sized like the originals) -----------------------------

CODEX_INSTRUCTION = (
    "Context checkpoint: the conversation is about to be compacted. Write a handoff note so that "
    "a fresh model can carry on with the one task that is still open (the latest user request "
    "not yet finished).\n\n"
    "Rules:\n"
    "- Cover only that task; do not repeat or reopen earlier tasks that are already finished.\n"
    "- Do not suggest reviews or re-checks nobody asked for.\n"
    "- If there were earlier tasks, mention them as done in a single short line.\n\n"
    "Sections:\n"
    "- Active task:\n"
    "- Progress so far:\n"
    "- Next steps for the active task:\n"
    "- Constraints and preferences that still apply:\n"
    "- Completed earlier tasks (optional, short):\n\n"
    "Keep it short and structured so the next model does not have to retrace its steps."
)
"""~150 tokens, like codex templates/compact/prompt.md (147 with o200k, research strategies.md)."""

OPENCODE_V1_INSTRUCTION = (
    "Write a detailed prompt that lets another agent pick up this conversation where it stands. "
    "Cover what was done, what is in progress, which files are being worked on and what comes "
    "next: the agent that reads it has nothing else to go on, so leave out nothing it needs to "
    "continue the work without asking again. Do not call tools; answer with the summary text "
    "only.\n\n"
    "When you write the summary, follow this outline as closely as you can, keeping its "
    "headings in this order:\n"
    "---\n"
    "## Goal\n"
    "[The goal or goals the user is pursuing, in their own terms.]\n"
    "## Instructions\n"
    "- [Every important instruction from the user that still applies to the work]\n"
    "- [Any plan or spec in play, with enough detail for the next agent to keep following it]\n"
    "## Discoveries\n"
    "[What was learned in this conversation that the next agent should know before it "
    "continues]\n"
    "## Accomplished\n"
    "[The work that is finished, the work still under way, and the work that is left to do, "
    "each in a few lines]\n"
    "## Relevant files / directories\n"
    "[A structured list of the files read, edited or created that matter for the task; name a "
    "whole directory when all of its files are relevant.]\n"
    "---"
)
"""~250 tokens, like opencode v1 compaction.ts (250 with o200k, research strategies.md)."""

OPENCODE_TAIL_INSTRUCTION = (
    "Write a new anchored summary of the conversation above so that another coding agent can "
    "continue. Keep every section even when empty, keep exact file paths, and do not mention "
    "that this is a summary.\n## Objective\n## Important Details\n## Work State\n### Completed\n"
    "### Active\n### Blocked\n## Next Move\n## Relevant Files"
)
OPENCODE_SUFFIX_INSTRUCTION = (
    "Summarize only the older part of the conversation above, up to the first retained item "
    "quoted below; this is a summarization task, not a continuation. " + OPENCODE_TAIL_INSTRUCTION
)

PI_INSTRUCTION = (
    "You summarize conversations between a user and a coding assistant, in a fixed structure. "
    "Do not continue the conversation, and do not answer any question asked in it: your only "
    "output is the summary.\n\n"
    "Summarize the conversation above as a checkpoint: another model will take up the work "
    "from your summary alone. Follow this format exactly:\n\n"
    "## Goal\n[What the user wants done; several items if the session moved between tasks.]\n\n"
    "## Constraints & Preferences\n- [Each requirement, limit or preference the user stated]\n"
    "- [Or \"(none)\" when they stated none]\n\n"
    "## Progress\n### Done\n- [x] [Each finished task or change]\n\n"
    "### In Progress\n- [ ] [The work under way]\n\n"
    "### Blocked\n- [What stops progress, if anything]\n\n"
    "## Key Decisions\n- **[Decision]**: [Why, in a line]\n\n"
    "## Next Steps\n1. [What comes next, in order]\n\n"
    "## Critical Context\n- [Data, examples or references the work cannot go on without]\n"
    "- [Or \"(none)\" when there are none]\n\n"
    "Keep every section short. Copy file paths, function names and error messages exactly."
)
"""Own wording of pi's summarizer system prompt and SUMMARIZATION_PROMPT (utils.ts,
compaction.ts; research strategies.md), written to their length: ~250 tokens with o200k."""

CLAUDE_CODE_INSTRUCTION = (
    "Your job now is to write a detailed summary of this conversation so far. The summary will "
    "replace the conversation: the work continues from it alone, so anything it leaves out is "
    "lost. Pay close attention to what the user explicitly asked for and to your own actions: "
    "the files you read and changed, the commands you ran, and what came back.\n\n"
    "Before the summary, think it through inside <analysis> tags. In the analysis:\n"
    "1. Go through the conversation message by message, in order. For each part, note:\n"
    "   - what the user asked for and what they meant by it;\n"
    "   - how you went about it;\n"
    "   - the decisions you made, the technical concepts involved and the code patterns used;\n"
    "   - the details that matter later: file names, whole code snippets, function "
    "signatures, the edits you made to each file;\n"
    "   - the errors you met and how you fixed them;\n"
    "   - the feedback the user gave, above all where they told you to do something "
    "differently.\n"
    "2. Check again that every technical detail is accurate and that nothing the user said "
    "is missing.\n\n"
    "Then give the summary inside <summary> tags, with these numbered sections:\n\n"
    "1. Primary Request and Intent: everything the user asked for, in detail, including how "
    "their requests changed along the way and any constraint they set.\n"
    "2. Key Technical Concepts: the technologies, languages, frameworks, libraries, tools and "
    "ideas the work relied on or discussed.\n"
    "3. Files and Code Sections: every file you examined, changed or created. For each one, "
    "say why it matters and what was done to it, and give the important snippets verbatim "
    "(the most recent edits above all), with the file's path.\n"
    "4. Errors and fixes: every error you ran into, its message, and how you fixed it. Where "
    "the user told you what was wrong or how to proceed, say so.\n"
    "5. Problem Solving: the problems you solved, and any troubleshooting still under way, "
    "with what has been ruled out so far.\n"
    "6. All user messages: list every message from the user that is not a tool result, in "
    "order. They show how the user's intent and feedback evolved, so keep them all.\n"
    "7. Pending Tasks: what you were asked to do and have not done yet.\n"
    "8. Current Work: precisely what you were working on immediately before this summary was "
    "requested, with the file names and code involved, taking particular care with the most "
    "recent messages from the user and from you.\n"
    "9. Optional Next Step: the next step you would take, directly in line with the user's "
    "latest explicit request and the work described in section 8. If the last task was "
    "finished, name a next step only if the user asked for one; do not start on requests "
    "that are tangential or long since settled without checking with the user first. Where "
    "there is a next step, quote the latest messages word for word to show exactly which task "
    "you were on and where you stopped, so there is no drift in how the task is understood.\n\n"
    "Lay the answer out like this:\n\n"
    "<analysis>\n"
    "[your reasoning, making sure every point above is covered thoroughly and accurately]\n"
    "</analysis>\n\n"
    "<summary>\n"
    "1. Primary Request and Intent:\n"
    "   [detailed description]\n\n"
    "2. Key Technical Concepts:\n"
    "   - [concept 1]\n"
    "   - [concept 2]\n"
    "   - [...]\n\n"
    "3. Files and Code Sections:\n"
    "   - [file name 1]\n"
    "      - [why this file matters]\n"
    "      - [what changed in it, if anything]\n"
    "      - [important code snippet]\n"
    "   - [file name 2]\n"
    "      - [important code snippet]\n"
    "   - [...]\n\n"
    "4. Errors and fixes:\n"
    "    - [error 1]:\n"
    "      - [how you fixed it]\n"
    "      - [what the user said about it, if anything]\n"
    "    - [...]\n\n"
    "5. Problem Solving:\n"
    "   [problems solved and troubleshooting in progress]\n\n"
    "6. All user messages:\n"
    "    - [every user message that is not a tool result]\n"
    "    - [...]\n\n"
    "7. Pending Tasks:\n"
    "   - [task 1]\n"
    "   - [task 2]\n"
    "   - [...]\n\n"
    "8. Current Work:\n"
    "   [precise description of the current work]\n\n"
    "9. Optional Next Step:\n"
    "   [the next step, if any, with the quotes that justify it]\n"
    "</summary>\n\n"
    "Be thorough where it matters, about code, file paths, commands and decisions, and concise "
    "everywhere else. If the conversation already holds an earlier summary, carry what it says "
    "forward into the new one rather than referring to it. Additional instructions may follow "
    "this message (for example which parts to focus on); follow them as well.\n\n"
    "Do not call any tools: answer with plain text only, the analysis and then the summary. "
    "Any tool call will be refused, and you will have used your one turn for nothing."
)
"""Own wording of the 9-section structure seen in public extractions (UNVERIFIED), written to
the extracted prompt's length (about 1,100 tokens, research strategies.md) because a replay
bills it as the tail of every summarizer request: ~1,170 tokens at Claude's calibrated scale,
~980 with o200k."""

AIDER_INSTRUCTION = (
    "Briefly summarize this partial conversation about programming, in the first person as the "
    "user (start with 'I asked you...'). Keep function names, libraries, packages and file names "
    "that were discussed. This summary replaces the earlier messages."
)
ROO_INSTRUCTION = (
    "Summarize the conversation so far in detail, so the work can continue without it. Sections: "
    "1. Previous Conversation, 2. Current Work, 3. Key Technical Concepts, 4. Relevant Files and "
    "Code, 5. Problem Solving, 6. Pending Tasks and Next Steps (quote the latest request)."
)
GEMINI_INSTRUCTION = (
    "You compress the history of a coding session into a <state_snapshot> the agent will treat as "
    "its only memory of the past. Think first in a private scratchpad, then write the snapshot "
    "with these XML sections: <overall_goal>, <active_constraints>, <key_knowledge>, "
    "<artifact_trail>, <file_system_state>, <recent_actions>, <task_state>. Be dense: every "
    "fact the agent needs to continue, nothing else.\n\nGenerate a new <state_snapshot> now."
)
GEMINI_VERIFY_INSTRUCTION = (
    "Critically evaluate the snapshot you just wrote against the history: did it drop any file "
    "path, constraint, decision or error the agent will need? Output the corrected snapshot."
)
GOOSE_INSTRUCTION = (
    "Summarize the conversation below so the assistant can continue without it. Sections: Goal, "
    "Constraints & Preferences, Progress (done / in progress / blocked), Key Decisions, Next "
    "Steps, Critical Context. Please summarize the conversation history now."
)
GOOSE_PAIR_INSTRUCTION = (
    "Summarize this tool call and its result in two or three sentences for the assistant's "
    "future reference. Start with [Historical tool call summary]."
)
OPENHANDS_SUMMARY_INSTRUCTION = (
    "You maintain a context-aware state summary for an interactive agent. Track: USER_CONTEXT, "
    "TASK_TRACKING, COMPLETED, PENDING, CURRENT_STATE, CODE_STATE, TESTS, CHANGES, DEPS, "
    "VERSION_CONTROL_STATUS. Update the previous summary with the events below, keeping every "
    "file path, failing test and decision. Now summarize the events using the rules above."
)
OPENHANDS_ATTENTION_INSTRUCTION = (
    "Rank the events above by how important they are for finishing the task. Answer with the "
    "list of event ids, most important first, and nothing else."
)
SERVER_COMPACTION_INSTRUCTION = (
    "Summarize the conversation so far so that it can continue from the summary alone: the "
    "task, the decisions made, the state of files and tests, and the next step."
)
"""Stand-in for provider-side compaction prompts (their text is not public)."""
