/**
 * Waits for what a test expects to happen asynchronously (a notification, a log line, a socket the server has
 * accepted) by checking again every 20 ms, instead of sleeping a fixed time and hoping it was enough: a loaded
 * machine takes longer, a quiet one does not wait for nothing (issue #30, "No flaky tests").
 * @throws after `ms` if `check` still does not hold, naming `what`
 * @example await eventually(() => logs.entries("request").length > 0, "the request's log line");
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
