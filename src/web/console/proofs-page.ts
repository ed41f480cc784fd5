/**
 * The console's identity proofs (V6, issue #29), every part derived from the table of proof kinds
 * (src/service/proofs/kinds): a form to start a challenge for each kind the current method counts, the challenge's
 * exact instructions (what to publish where, or what to sign, the wallet's signature made in the page when a wallet is
 * there), the form that sends the evidence its kind takes, and the owner's proofs with their next re-check.
 */
import { toRfc3339, type ProofKind } from "../../method";
import type { IssuedChallenge } from "../../service/proof-checks";
import { currentProofRule, OFFERED_PROOF_KINDS, proofKindModule, type Publication } from "../../service/proofs/kinds";
import type { ProofWithRecheck } from "../../service/owner-agents";
import { formatTime } from "../format";
import { html, type Html } from "../html";
import { canWrite, postForm, readOnlyNote, snippet, type RenderedPage, type ConsoleViewer, type Notice } from "./common";
import { consolePage } from "./document";
import { csrfField } from "./layout";

/** A proof kind as the console offers it: the table's words and the current method's rule (V6). */
export type ProofKindView = {
  kind: ProofKind;
  title: string;
  summary: string;
  subjectExample: string;
  belongsTo: "owner" | "agent";
  points: number;
  recheckDays: number | null;
};

/** The kinds the current method counts, in its table's order, as the console offers them. */
export function offeredKindViews(): ProofKindView[] {
  return OFFERED_PROOF_KINDS.map((kind) => {
    const module = proofKindModule(kind);
    const rule = currentProofRule(kind);
    return {
      kind,
      title: module.title,
      // The summary as the API document has it, less its Markdown code marks.
      summary: module.summary.replaceAll("`", ""),
      subjectExample: module.subjectExample,
      belongsTo: rule.belongsTo,
      points: rule.points,
      recheckDays: rule.recheckDays,
    };
  });
}

const at = (t: number) => formatTime(toRfc3339(t));
const recheckWords = (k: ProofKindView) => (k.recheckDays === null ? "never re-checked" : `re-checked every ${k.recheckDays} days`);

/** The form that starts a challenge of `kind` (for `agentId` when it belongs to one agent). */
function challengeForm(viewer: ConsoleViewer, k: ProofKindView, agentId: string | null): Html | null {
  const id = `subject-${k.kind}`;
  return postForm(viewer, "/console/proofs/challenges", {
    label: `Start a ${k.title} proof`,
    className: "stacked",
    fields: html`<input type="hidden" name="kind" value="${k.kind}">
${agentId === null ? null : html`<input type="hidden" name="agentId" value="${agentId}">`}
<div><label for="${id}">${k.title} <span class="hint">(e.g. ${k.subjectExample})</span></label>
<input type="text" id="${id}" name="subject" maxlength="300" required></div>
`,
  });
}

/** A kind's card: what it proves, what it counts, and its form. */
function kindCard(viewer: ConsoleViewer, k: ProofKindView, agentId: string | null): Html {
  return html`<li class="card" data-proof-kind="${k.kind}"><h3>${k.title}</h3>
<p>${k.summary}.</p>
<p class="muted">${k.points} points, ${k.belongsTo === "owner" ? "for every agent of the owner" : "for this agent only"}; ${recheckWords(k)}.</p>
${challengeForm(viewer, k, agentId)}</li>`;
}

/** The forms that start a proof of one agent (V6: agent-level kinds), for its console page; null for a read-only session. */
export function agentProofForms(viewer: ConsoleViewer, agentId: string, kinds: readonly ProofKindView[]): Html | null {
  if (!canWrite(viewer)) return null;
  return html`<ul class="cards proof-kinds">${kinds.filter((k) => k.belongsTo === "agent").map((k) => kindCard(viewer, k, agentId))}</ul>`;
}

/** The proofs page: the owner's own proofs and a form for each owner-level kind. */
export type ProofsView = { viewer: ConsoleViewer; proofs: readonly ProofWithRecheck[]; kinds: readonly ProofKindView[]; notice?: Notice };

/** The console's proofs page. */
export function renderProofsPage<S extends number>(status: S, view: ProofsView): RenderedPage<S> {
  const { viewer } = view;
  const agentKinds = view.kinds.filter((k) => k.belongsTo === "agent").map((k) => k.title);
  const list =
    view.proofs.length === 0
      ? html`<p>No proof of the owner yet.</p>`
      : html`<ul class="cards owner-proofs">${view.proofs.map(
          ({ proof, nextRecheckAt }) => html`<li class="card" data-kind="${proof.kind}"><h3>${proofKindModule(proof.kind).title}</h3>
<p><code>${proof.subject}</code>, verified ${at(proof.verifiedAt)}; ${nextRecheckAt === null ? "never re-checked" : html`next check ${at(nextRecheckAt)}`}.</p>
${postForm(viewer, `/console/proofs/${proof.id}/remove`, { label: "Remove", danger: true })}</li>`,
        )}</ul>`;
  const main = html`<header><h1>Proofs</h1>
<p>A proof of the owner counts for every agent it has claimed (V6). ${agentKinds.join(" and ")} proofs belong to one agent: start them from
<a href="/console/agents">the agent's page</a>.</p></header>
<section aria-labelledby="owner-proofs-heading"><h2 id="owner-proofs-heading">Proofs of the owner</h2>${list}</section>
<section aria-labelledby="add-proof-heading"><h2 id="add-proof-heading">Add a proof</h2>
${
  canWrite(viewer)
    ? html`<ul class="cards proof-kinds">${view.kinds.filter((k) => k.belongsTo === "owner").map((k) => kindCard(viewer, k, null))}</ul>`
    : readOnlyNote(viewer, "add proofs")
}</section>`;
  return consolePage(status, { title: "Proofs", main, viewer, current: "proofs", notice: view.notice });
}

const PUBLICATION_WORDS: Readonly<Record<Publication["type"], { where: string; what: string }>> = {
  "dns-txt": { where: "A DNS TXT record named", what: "with the value" },
  "https-file": { where: "Or a file served over HTTPS at", what: "with the content" },
  gist: { where: "A public GitHub gist:", what: "containing" },
};

/** A placeholder of the instructions' evidence, e.g. `<the gist id>`: a field the owner fills in. */
const isPlaceholder = (value: string | number) => typeof value === "string" && /^<.*>$/.test(value);

/** The challenge's page: what to publish or sign, and the evidence form (`values`: what was sent, kept after a refusal). */
export type ChallengeView = {
  viewer: ConsoleViewer;
  challenge: IssuedChallenge;
  values?: Readonly<Record<string, string>>;
  notice?: Notice;
};

/** The page of one challenge: its instructions and the form that answers it. */
export function renderChallengePage<S extends number>(status: S, view: ChallengeView): RenderedPage<S> {
  const { viewer, challenge: c } = view;
  const module = proofKindModule(c.kind);
  const instructions = module.instructions(c, c.context);
  const { sign } = instructions;
  const signed = sign !== null;
  const publications = instructions.publish.map((p, i) => {
    const words = PUBLICATION_WORDS[p.type];
    return html`<li data-publication="${p.type}"><p>${words.where} <code>${p.name}</code> ${words.what}:</p>
${snippet("", `publish-${i}`, p.value)}</li>`;
  });
  const signing =
    sign === null
      ? null
      : html`<section aria-labelledby="sign-heading"><h2 id="sign-heading">Sign</h2>
<p>With ${sign.by}, sign this message as it is:</p>
${snippet("", "sign-message", sign.message)}
<p>Or leave the signature below empty: your browser's wallet is asked to sign it when you send the form.</p></section>`;
  // The evidence's fields by their names (the console's script fills in `signature` and reads `address`, see below).
  const fields = Object.entries(instructions.evidence).map(([name, value]) => {
    if (!isPlaceholder(value)) return html`<input type="hidden" name="${name}" value="${String(value)}">`;
    const id = `evidence-${name}`;
    // A signature is left empty to have the browser's wallet sign when the form is sent.
    const walletSigns = signed && name === "signature";
    const hint = walletSigns
      ? `${String(value).slice(1, -1)}; leave it empty to sign with your browser's wallet`
      : String(value).slice(1, -1);
    return html`<div><label for="${id}">${name} <span class="hint">(${hint})</span></label>
<input type="text" id="${id}" name="${name}" value="${view.values?.[name] ?? ""}"${walletSigns ? null : html` required`}
 autocomplete="off" spellcheck="false"></div>
`;
  });
  const fixed = Object.entries(instructions.evidence).filter(([, value]) => !isPlaceholder(value));
  // The console's script signs `data-message` with the wallet on submit when the signature is empty (by the `address` field's account).
  const wallet = sign === null ? null : html` data-wallet-sign data-message="${sign.message}"`;
  const form = canWrite(viewer)
    ? html`<form method="post" action="/console/proofs" class="stacked" id="evidence-form"${wallet}>
${csrfField(viewer)}
<input type="hidden" name="challengeId" value="${c.id}">
${fixed.length === 0 ? null : html`<p>Sent with it: ${fixed.map(([name, value], i) => html`${i === 0 ? "" : ", "}${name} <code>${String(value)}</code>`)}.</p>`}
${fields}${signed ? html`<p class="alert" data-wallet-error role="alert" hidden></p>` : null}
<div class="actions"><button type="submit">${signed ? "Sign and send" : "Send the evidence"}</button></div>
</form>`
    : readOnlyNote(viewer, "answer challenges");
  const used = c.usedAt !== null;
  const main = html`<header><p class="eyebrow">${module.title} proof</p><h1>${c.subject}</h1>
<p class="muted">Challenge <code>${c.id}</code>${
    c.agentId === null ? " · for the owner" : html` · for agent <a href="/console/agents/${c.agentId}">${c.agentId}</a>`
  }
 · ${used ? "used" : html`expires ${at(c.expiresAt)}`}</p></header>
<section aria-labelledby="steps-heading"><h2 id="steps-heading">What to do</h2>
<ol class="steps">${instructions.steps.map((step) => html`<li>${step}</li>`)}</ol>
${publications.length === 0 ? null : html`<ul class="publications">${publications}</ul>`}</section>
${signing}
<section aria-labelledby="evidence-heading"><h2 id="evidence-heading">Send the evidence</h2>
${used ? html`<p>This challenge was used. <a href="/console/proofs">Start another</a>.</p>` : form}</section>`;
  return consolePage(status, { title: `${module.title} proof`, main, viewer, current: "proofs", notice: view.notice });
}
