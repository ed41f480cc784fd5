import { expect } from "chai";
import { z } from "zod";
import { openApiDocument } from "./openapi";
import { defineRoute, errorResponse, type RequestParts } from "./route";

const parts = (given: Partial<RequestParts> = {}): RequestParts => ({
  params: {},
  query: {},
  headers: {},
  body: undefined,
  ownerId: "",
  operatorName: "",
  credential: "",
  keyVerified: async () => undefined,
  ...given,
});

describe("a declared route", () => {
  const route = defineRoute({
    method: "post",
    path: "/v1/things/:id",
    operationId: "makeThing",
    tag: "things",
    auth: "owner",
    summary: "Make a thing.",
    params: z.object({ id: z.string().regex(/^[a-z]+$/, "expected letters") }),
    query: z.object({ n: z.coerce.number().int().default(1) }),
    headers: z.object({ "x-kind": z.enum(["a", "b"]) }),
    body: z.object({ name: z.string().min(1) }).strict(),
    responses: {
      201: {
        description: "made",
        schema: z.object({ id: z.string(), n: z.number(), kind: z.string(), name: z.string(), ownerId: z.string() }),
      },
      400: errorResponse("bad request"),
    },
  }).handle(async ({ params, query, headers, body, ownerId }) => ({
    status: 201,
    body: { id: params.id, n: query.n, kind: headers["x-kind"], name: body.name, ownerId },
  }));

  it("gives its handler every part as parsed by its schemas, and the authenticated owner", async () => {
    const reply = await route.respond(
      parts({
        params: { id: "abc" },
        query: { n: "3" },
        headers: { "x-kind": "b", other: "dropped" },
        body: { name: "x" },
        ownerId: "own_1",
      }),
    );
    expect(reply).to.deep.equal({ status: 201, body: { id: "abc", n: 3, kind: "b", name: "x", ownerId: "own_1" } });
    const defaults = await route.respond(parts({ params: { id: "abc" }, headers: { "x-kind": "a" }, body: { name: "y" } }));
    expect(defaults).to.deep.include({ status: 201 });
    expect("body" in defaults && defaults.body).to.deep.include({ n: 1 });
  });

  it("refuses the first bad part with a 400 naming the field, before the handler runs", async () => {
    const failures: Array<[Partial<RequestParts>, RegExp]> = [
      [{ params: { id: "ABC" } }, /^path\.id: expected letters$/],
      [{ params: { id: "abc" }, query: { n: "x" } }, /^query\.n: /],
      [{ params: { id: "abc" }, headers: { "x-kind": "c" } }, /^header\.x-kind: /],
      [{ params: { id: "abc" }, headers: { "x-kind": "a" }, body: { name: "" } }, /^body\.name: /],
      [{ params: { id: "abc" }, headers: { "x-kind": "a" }, body: { name: "x", extra: 1 } }, /^body: /],
      // No body at all is validated as `{}`.
      [{ params: { id: "abc" }, headers: { "x-kind": "a" } }, /^body\.name: /],
    ];
    for (const [given, message] of failures) {
      const error = await route.respond(parts(given)).then(
        () => null,
        (e: { message: string; status: number; code: string }) => e,
      );
      expect(error, JSON.stringify(given)).to.include({ status: 400, code: "invalid_request" });
      expect(error?.message, JSON.stringify(given)).to.match(message);
    }
  });

  it("refuses NUL and lone surrogates in every part it declares, headers it does not read aside (issue 15)", async () => {
    const problem = "must not contain NUL, unpaired surrogates or U+FFFD (invalid UTF-8)";
    const good = { params: { id: "abc" }, query: { n: "3" }, headers: { "x-kind": "a" }, body: { name: "x" } };
    const failures: Array<[Partial<RequestParts>, string]> = [
      [{ ...good, params: { id: "ab\u0000" } }, "path.id"],
      [{ ...good, query: { n: "3", other: ["x", "\ud800"] } }, "query.other.1"],
      [{ ...good, headers: { "x-kind": "a\u0000" } }, "header.x-kind"],
      [{ ...good, body: { name: "x\udc00" } }, "body.name"],
    ];
    for (const [given, field] of failures) {
      const error = await route.respond(parts(given)).then(
        () => null,
        (e: { message: string; status: number; code: string }) => e,
      );
      expect(error, field).to.include({ status: 400, code: "invalid_request", message: `${field}: ${problem}` });
    }
    const undeclared = await route.respond(parts({ ...good, headers: { "x-kind": "a", "x-other": "\u0000" } }));
    expect(undeclared.status).to.equal(201);
  });

  it("is described in the OpenAPI document by the same schemas: parameters, body, responses and security", () => {
    const document = openApiDocument([route], { version: "9.9.9" });
    const operation = z
      .object({
        paths: z.object({
          "/v1/things/{id}": z.object({
            post: z.object({
              operationId: z.string(),
              summary: z.string(),
              tags: z.array(z.string()),
              security: z.array(z.record(z.string(), z.array(z.string()))),
              parameters: z.array(z.object({ name: z.string(), in: z.string(), required: z.boolean() })),
              requestBody: z.object({ required: z.boolean() }),
              responses: z.record(z.string(), z.object({ description: z.string(), content: z.unknown() })),
            }),
          }),
        }),
      })
      .parse(document).paths["/v1/things/{id}"].post;
    expect(operation.summary).to.equal("Make a thing.");
    expect(operation.security).to.deep.equal([{ ownerToken: [] }]);
    expect(operation.parameters.map((p) => [p.name, p.in, p.required])).to.deep.equal([
      ["id", "path", true],
      ["n", "query", false],
      ["x-kind", "header", true],
    ]);
    expect(operation.operationId).to.equal("makeThing");
    // Its own responses, and those the HTTP layer answers for a route with a body and a credential; an owner
    // write also answers 403 to a read-only owner token (issue #29).
    expect(Object.keys(operation.responses)).to.deep.equal(["201", "400", "401", "403", "413", "415", "429", "503"]);
    expect(operation.responses["403"]?.description).to.include("read_only_token");
  });

  it("documents an example only when its schema accepts it, formats and values included", () => {
    const withExample = (example: { id: string }) =>
      defineRoute({
        method: "get",
        path: "/v1/ids",
        operationId: "getId",
        tag: "things",
        auth: "none",
        summary: "An id.",
        responses: { 200: { description: "ok", schema: z.object({ id: z.string().regex(/^id_/) }), example } },
      }).handle(async () => ({ status: 200, body: { id: "id_1" } }));
    const document = JSON.stringify(openApiDocument([withExample({ id: "id_7" })], { version: "1" }));
    expect(document).to.contain('"example":{"id":"id_7"}');
    expect(() => openApiDocument([withExample({ id: "7" })], { version: "1" })).to.throw(
      "the example of getId 200 does not match its schema: example.id: ",
    );
  });
});
