// The bench's handshake with a peer's script: between the enqueue and the drain the
// bench samples the server's WAL counters, so the script says "queued" and waits for
// "go" on standard input.
import { createInterface } from "node:readline";

export async function queued() {
  console.log("queued");
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === "go") break;
  }
  lines.close();
  process.stdin.destroy();
}
