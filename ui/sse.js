// Server-Sent Events over fetch: EventSource cannot send an Authorization header, so
// the stream is read from a fetch body and parsed here (the text/event-stream format:
// blocks separated by a blank line, `id:`, `event:` and `data:` lines, `:` comments).

import { authHeaders, ApiError } from "./api.js";

/**
 * Streams a task's events with seq > `after`, calling `onEvent({seq, type, data, at})`
 * for each, until the server ends the stream (after the terminal event) or `signal`
 * aborts. Resolves when the stream ends; rejects on a refusal or a broken connection.
 */
export async function streamEvents(id, after, onEvent, signal) {
  await stream(`/v1/tasks/${encodeURIComponent(id)}/events?after=${after}`, (block) => {
    const event = parseBlock(block);
    if (event) onEvent(event);
  }, signal);
}

/**
 * Streams a task's live output, calling `onEvent({type, data})` for each event
 * (`output.delta`, `output.reset`, then the terminal event with the task view), until
 * the server ends the stream or `signal` aborts.
 */
export async function streamOutput(id, onEvent, signal) {
  await stream(`/v1/tasks/${encodeURIComponent(id)}/output`, (block) => {
    const event = parseTyped(block);
    if (event) onEvent(event);
  }, signal);
}

/** Reads the event stream at `path`, handing each block to `onBlock`. */
async function stream(path, onBlock, signal) {
  const response = await fetch(path, {
    headers: authHeaders({ accept: "text/event-stream" }),
    credentials: "omit",
    cache: "no-store",
    signal,
  });
  if (!response.ok) {
    let problem = {};
    try {
      problem = await response.json();
    } catch {
      problem = {};
    }
    throw new ApiError(response.status, problem);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = blockEnd(buffer)) !== null) {
      const block = buffer.slice(0, end.at);
      buffer = buffer.slice(end.at + end.length);
      onBlock(block);
    }
  }
}

function blockEnd(buffer) {
  const match = /\r?\n\r?\n/.exec(buffer);
  return match ? { at: match.index, length: match[0].length } : null;
}

/** One block as the event view it carries (its `data` is the JSON event), or null. */
export function parseBlock(block) {
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length === 0) return null;
  try {
    return JSON.parse(data.join("\n"));
  } catch {
    return null;
  }
}

/** One block as `{type, data}` (its `event:` and its JSON `data:`), or null. */
export function parseTyped(block) {
  const type = block.split(/\r?\n/).find((line) => line.startsWith("event:"));
  const data = parseBlock(block);
  return type && data ? { type: type.slice(6).trim(), data } : null;
}
