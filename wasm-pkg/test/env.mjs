// What tests/src/bin/web.rs passes the tests that need a running origin or edge.

/** The variable `name`; an error that says how to run the test when it is not set. */
export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through target/debug/web`);
  return value;
}
