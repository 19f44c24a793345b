/** The live server scripts/test-clients.sh starts (tests skip without it). */
import { randomUUID } from "node:crypto";

export const env = {
  url: process.env.TASKLANE_URL ?? "",
  token: process.env.TASKLANE_TOKEN ?? "",
  databaseUrl: process.env.TASKLANE_DATABASE_URL ?? "",
  app: process.env.TASKLANE_APP ?? "clients",
};

export const skip = env.url ? false : "no live server: run scripts/test-clients.sh";

/** A scope of one test alone. */
export function scope(): string {
  return `ts-${randomUUID()}`;
}
