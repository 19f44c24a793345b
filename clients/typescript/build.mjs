// Builds dist/src, what package.json's main, types and exports name, with this package's
// own pinned devDependencies (package-lock.json). npm runs it as `prepare`: on `npm
// install` or `npm ci` in this folder, on `npm pack` and `npm publish` (so a packed
// tarball carries dist/src and installs without building), and when an application
// installs the folder (`npm install ./clients/typescript`). In that last case npm links
// the folder without installing the folder's own dependencies, so they are installed
// here first (`npm ci`, scripts off) when the compiler or openapi-fetch is missing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const run = (command, args) => {
  const { status, error } = spawnSync(command, args, { cwd: here, stdio: "inherit", env });
  if (error) throw error;
  if (status !== 0) process.exit(status ?? 1);
};

// The application's install settings (global, omit=dev, a prefix, ...) reach this script
// as npm_config_* variables: they are not meant for this folder's own install.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_config_(global|location|prefix|omit|include|production|only|dry_run|ignore_scripts|install_links|workspaces?|save)/i.test(k)),
);

const installed = (name) => existsSync(join(here, "node_modules", name, "package.json"));
if (!installed("typescript") || !installed("openapi-fetch")) {
  const npm = process.env.npm_execpath;
  const [command, prefix] = npm ? [process.execPath, [npm]] : ["npm", []];
  run(command, [...prefix, "ci", "--include=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]);
}
run(process.execPath, [join(here, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"]);
