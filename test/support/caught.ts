/** Runs `action` and returns what it threw; fails the test if it did not throw. */
export async function caught(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it resolved');
}
