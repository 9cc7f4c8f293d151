// The JavaScript side of a three-file skill run: import the skill, call its function with the JSON
// input from stdin, print {"result": ...} (or {"error": ...}) as JSON. console.log goes to stderr so
// the skill's own logging cannot corrupt the result.
import { pathToFileURL } from "node:url";

const [skillPath, names, displayName] = process.argv.slice(2);
let input = "";
for await (const chunk of process.stdin) input += chunk;

const fail = (type, message) => {
  process.stdout.write(JSON.stringify({ error: { type, message: String(message).slice(0, 2000), frames: [] } }));
  process.exitCode = 1;
};

console.log = (...args) => console.error(...args);
try {
  const payload = input.trim() ? JSON.parse(input) : {};
  const mod = await import(pathToFileURL(skillPath).href);
  const pick = (obj) => names.split(",").map((n) => obj?.[n]).find((f) => typeof f === "function");
  const fn = pick(mod) ?? pick(mod.default) ?? (typeof mod.default === "function" ? mod.default : undefined);
  if (!fn) {
    fail("NotExecutable", `${displayName} exports none of: ${names}`);
  } else {
    const result = await fn(payload);
    process.stdout.write(JSON.stringify({ result: result ?? null }));
  }
} catch (error) {
  fail(error?.name ?? "Error", error?.message ?? error);
}
