/**
 * A task's live output (`GET /v1/tasks/{id}/output`), read from its Server-Sent Events:
 * the text of the running model call in order (`output.delta`), `output.reset` when
 * another attempt starts (discard the text so far), and last the task's terminal event
 * with the task view. Live output is not durable: a new stream starts again from the
 * current attempt's text so far.
 */

import type { components } from "./schema.js";

type TaskView = components["schemas"]["TaskView"];

export type OutputEvent =
  | { type: "output.delta"; attempt: number; offset: number; text: string }
  | { type: "output.reset"; attempt: number }
  | { type: "task.succeeded" | "task.failed" | "task.cancelled"; task: TaskView };

/** The events of an output stream's body, until it ends. */
export async function* readOutput(body: ReadableStream<Uint8Array>): AsyncGenerator<OutputEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parse(block);
        if (event) yield event;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parse(block: string): OutputEvent | undefined {
  let type = "";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) type = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!type || data.length === 0) return undefined; // a keep-alive comment
  const value = JSON.parse(data.join("\n"));
  if (type === "output.delta") return { type, attempt: value.attempt, offset: value.offset, text: value.text };
  if (type === "output.reset") return { type, attempt: value.attempt };
  return { type: type as "task.succeeded" | "task.failed" | "task.cancelled", task: value as TaskView };
}
