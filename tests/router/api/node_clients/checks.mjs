// Runs a client's checks one after another and prints their results as one JSON object on
// stdout, keyed by check name: {"result": ...} or {"error": "..."}. One failing call does not
// hide the others' results; the pytest side asserts on each.

export const url = process.env.CORRAL_URL;
if (!url) {
  throw new Error("CORRAL_URL is not set: run these through tests/router/api/test_node_clients_e2e.py");
}
// Small answers keep the job quick on two cores.
export const MAX_TOKENS = 8;

export async function runChecks(checks) {
  const results = {};
  for (const [name, check] of Object.entries(checks)) {
    try {
      results[name] = { result: await check() };
    } catch (error) {
      results[name] = { error: `${error?.constructor?.name}: ${error?.message ?? error}`, status: error?.status ?? null };
    }
  }
  process.stdout.write(JSON.stringify(results) + "\n");
}
