// The HTTP API from the browser: the token lives in sessionStorage (gone with the tab,
// never in a URL or a cookie) and goes out only as a bearer header to this origin.

const KEY = "tasklane.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

/** A refusal of the API: its status and problem+json `code`. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
  }
}

/** Called with every 401, so the console can ask for a token again. */
let onUnauthorized = () => {};
export function whenUnauthorized(callback) {
  onUnauthorized = callback;
}

export function authHeaders(extra = {}) {
  return { authorization: `Bearer ${token.get() || ""}`, ...extra };
}

/** `method path` with an optional JSON body; the JSON answer, or an ApiError. */
export async function api(method, path, body) {
  const headers = authHeaders({ accept: "application/json" });
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data || {});
    if (response.status === 401) onUnauthorized(error);
    throw error;
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body ?? {});
export const put = (path, body) => api("PUT", path, body);

/** A query string of the non-empty entries of `params`. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Whether a route is missing on this server (an older or newer replica). */
export const isNoRoute = (error) => error instanceof ApiError && error.code === "no_route";
