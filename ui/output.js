// A task's live output: the text of its running model call as it arrives (streamed
// over SSE, read with fetch like the event timeline). A reset (another attempt
// started) replaces the text; the stream ends with the task's terminal event. Live
// output is not kept: a reconnect starts again from the attempt's text so far, and
// what was already shown is not repeated.

import { html, useEffect, useState } from "./vendor/htm-preact-standalone.mjs";
import { streamOutput } from "./sse.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The live text of task `id` and of which attempt, following it until terminal. */
function useOutput(id, round) {
  const [output, setOutput] = useState({ attempt: null, text: "", ended: false });
  useEffect(() => {
    const abort = new AbortController();
    (async () => {
      while (!abort.signal.aborted) {
        let ended = false;
        try {
          await streamOutput(id, ({ type, data }) => {
            if (type === "output.reset") {
              setOutput({ attempt: data.attempt, text: "", ended: false });
            } else if (type === "output.delta") {
              setOutput((now) => {
                const same = now.attempt === data.attempt;
                const text = same ? now.text : "";
                const seen = [...text].length;
                if (data.offset > seen) return now; // a gap: the next stream fills it
                const fresh = [...data.text].slice(seen - data.offset).join("");
                return { attempt: data.attempt, text: text + fresh, ended: false };
              });
            } else {
              ended = true;
              setOutput((now) => ({ ...now, ended: true }));
            }
          }, abort.signal);
        } catch (failure) {
          if (abort.signal.aborted) return;
          if ([401, 403, 404].includes(failure.status)) return;
        }
        if (ended) return;
        await sleep(1500);
      }
    })();
    return () => abort.abort();
  }, [id, round]);
  return output;
}

/** The live output section, shown once there is text. */
export function LiveOutput({ id, round }) {
  const { attempt, text, ended } = useOutput(id, round);
  if (!text) return null;
  return html`
    <section aria-labelledby="h-output">
      <h2 id="h-output">Output</h2>
      <p class="stream" role="status">Attempt ${attempt}: ${ended ? "ended" : "live"}</p>
      <pre class="json output" data-testid="live-output" aria-live="polite">${text}</pre>
    </section>`;
}
