export { Tasklane, createHttpClient, TERMINAL_STATES } from "./client.js";
export type { HttpClient, TaskView, SubmitBody, Problem, RetryOptions } from "./client.js";
export { TasklaneError, RETRYABLE_CODES } from "./errors.js";
export { readOutput } from "./output.js";
export type { OutputEvent } from "./output.js";
export { runTask, releaseTask, deleteTasks, listUnreleasedSources } from "./sql.js";
export type { Db, PostgresJs, NodePg, RunTaskArgs, RunTaskResult } from "./sql.js";
export type { paths, components, operations } from "./schema.js";
