import fs from "node:fs";
import { expect } from "chai";
import { API_TYPES_FILE, renderApiTypes } from "../../scripts/gen-api-types";

/** Where two texts first differ, by line: a stale file's failure says where to look. */
function firstDifference(committed: string, generated: string): string {
  const [a, b] = [committed.split("\n"), generated.split("\n")];
  const line = Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i).find((i) => a[i] !== b[i]);
  return line === undefined ? "" : `line ${line + 1}: committed ${JSON.stringify(a[line])}, generated ${JSON.stringify(b[line])}`;
}

describe("the SDK's types of the API's JSON (src/sdk/api-types.ts)", () => {
  it("are what npm run gen:api-types writes from the routes as declared now", async () => {
    expect(firstDifference(fs.readFileSync(API_TYPES_FILE, "utf8"), await renderApiTypes()), "stale: run npm run gen:api-types").to.equal(
      "",
    );
  });
});
