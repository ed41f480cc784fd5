import { expect } from "chai";

/**
 * The message `action` throws with, after checking the error carries `code`; null when it does not throw.
 * @example expect(rejectionMessage(() => validateRecord(json, 3), "invalid_record")).to.match(/txHash/);
 */
export function rejectionMessage(action: () => unknown, code: string): string | null {
  try {
    action();
    return null;
  } catch (error) {
    expect(error).to.have.property("code", code);
    return (error as Error).message;
  }
}
