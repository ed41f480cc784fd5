/**
 * The owners' console's one script (issue #29), built into dist/console.js and loaded by every console page: what
 * needs a wallet (EIP-1193 `window.ethereum`) or the clipboard. Sign-In with Ethereum on the sign-in page;
 * `signWithWallet` for any page that asks a wallet to sign a message (a wallet proof), also as forms marked
 * `data-wallet-sign`; a Copy button beside each text to copy (a key, a command, a snippet). Every page works without it
 * (a token signs in, a text to copy is selected whole in one click), so it only ever adds to a page.
 */

/** An EIP-1193 provider: what a browser wallet puts in `window.ethereum`. */
type Eip1193Provider = { request(args: { method: string; params?: unknown[] }): Promise<unknown> };

/** What the script offers other pages' code. */
export type VraiConsole = {
  /** Asks the wallet to sign `message` (EIP-191 `personal_sign`), by `address` when given, else by its first account. */
  signWithWallet(message: string, address?: string): Promise<{ address: string; signature: string }>;
};

declare global {
  interface Window {
    ethereum?: Eip1193Provider;
    vraiConsole?: VraiConsole;
  }
}

/** An error in words: this script's own as it says it, a wallet's (it has a `code`; EIP-1193's 4001 is the person saying no) as the wallet's. */
function walletErrorText(error: unknown): string {
  const code = typeof error === "object" && error !== null ? Reflect.get(error, "code") : undefined;
  if (code === 4001) return "You declined in your wallet: nothing was signed.";
  if (error instanceof Error && code === undefined) return error.message;
  const message = error instanceof Error ? error.message : typeof error === "object" && error !== null ? Reflect.get(error, "message") : "";
  return `Your wallet could not sign${typeof message === "string" && message !== "" ? `: ${message}` : "."}`;
}

/** UTF-8 text as 0x hex, as `personal_sign` takes it. */
function hexOf(text: string): string {
  let hex = "0x";
  for (const byte of new TextEncoder().encode(text)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

function provider(): Eip1193Provider {
  const ethereum = window.ethereum;
  if (ethereum === undefined) throw new Error("No wallet was found in this browser.");
  return ethereum;
}

async function accountOf(wallet: Eip1193Provider, wanted?: string): Promise<string> {
  const accounts = await wallet.request({ method: "eth_requestAccounts" });
  if (!Array.isArray(accounts) || accounts.length === 0 || typeof accounts[0] !== "string") throw new Error("The wallet gave no account.");
  if (wanted === undefined) return accounts[0];
  const found = accounts.find((a) => typeof a === "string" && a.toLowerCase() === wanted.toLowerCase());
  if (typeof found !== "string") throw new Error(`The wallet does not offer the account ${wanted}: switch to it in your wallet.`);
  return found;
}

async function signWithWallet(message: string, address?: string): Promise<{ address: string; signature: string }> {
  const wallet = provider();
  const account = await accountOf(wallet, address);
  const signature = await wallet.request({ method: "personal_sign", params: [hexOf(message), account] });
  if (typeof signature !== "string") throw new Error("The wallet gave no signature.");
  return { address: account, signature };
}

/** A JSON POST to the console; its error's message when it is refused. */
async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const json: unknown = await res.json().catch(() => ({}));
  const answer = typeof json === "object" && json !== null ? Object.fromEntries(Object.entries(json)) : {};
  if (!res.ok) {
    const error = answer.error;
    const message = typeof error === "object" && error !== null ? Reflect.get(error, "message") : undefined;
    throw new Error(typeof message === "string" ? message : `The service answered ${res.status}.`);
  }
  return answer;
}

/** The sign-in page's wallet button: nonce and message from the service, the wallet's signature, the session. */
function setUpSignIn(button: HTMLButtonElement): void {
  const status = document.getElementById("siwe-status");
  const errorBox = document.getElementById("siwe-error");
  const unavailable = document.getElementById("siwe-unavailable");
  if (window.ethereum === undefined) {
    if (unavailable) unavailable.textContent = "No wallet was found in this browser: install one, or sign in with a token below.";
    return;
  }
  unavailable?.setAttribute("hidden", "");
  button.hidden = false;
  const say = (text: string) => {
    if (status) status.textContent = text;
  };
  button.addEventListener("click", async () => {
    button.disabled = true;
    errorBox?.setAttribute("hidden", "");
    try {
      say("Asking your wallet for its account…");
      const wallet = provider();
      const address = await accountOf(wallet);
      const { message } = await post("/console/siwe/nonce", { address });
      if (typeof message !== "string") throw new Error("The service gave no message to sign.");
      say("Sign the message in your wallet…");
      const signature = await wallet.request({ method: "personal_sign", params: [hexOf(message), address] });
      say("Signing in…");
      const { redirect } = await post("/console/siwe", { message, signature, next: button.dataset.next });
      window.location.assign(typeof redirect === "string" ? redirect : "/console");
    } catch (error) {
      say("");
      if (errorBox) {
        errorBox.textContent = walletErrorText(error);
        errorBox.removeAttribute("hidden");
      }
      button.disabled = false;
    }
  });
}

/**
 * A form marked `data-wallet-sign`: on submit, its `message` field (or `data-message`) is signed by the wallet (by its
 * `address` field's account when it has a value), and the form is sent with `signature` and `address` filled in.
 */
function setUpWalletForm(form: HTMLFormElement): void {
  form.addEventListener("submit", async (event) => {
    const signatureField = form.elements.namedItem("signature");
    if (!(signatureField instanceof HTMLInputElement) || signatureField.value !== "") return;
    event.preventDefault();
    const messageField = form.elements.namedItem("message");
    const message =
      form.dataset.message ??
      (messageField instanceof HTMLTextAreaElement || messageField instanceof HTMLInputElement ? messageField.value : "");
    const addressField = form.elements.namedItem("address");
    const errorBox = form.querySelector<HTMLElement>("[data-wallet-error]");
    try {
      const wanted = addressField instanceof HTMLInputElement && addressField.value !== "" ? addressField.value : undefined;
      const signed = await signWithWallet(message, wanted);
      signatureField.value = signed.signature;
      if (addressField instanceof HTMLInputElement) addressField.value = signed.address;
      form.submit();
    } catch (error) {
      if (errorBox) {
        errorBox.textContent = walletErrorText(error);
        errorBox.removeAttribute("hidden");
      }
    }
  });
}

/** How long a Copy button says what it did before it says Copy again. */
const COPIED_SHOWN_MS = 2000;

/** A Copy button after `pre` (a `pre.copyable`): its text to the clipboard, and what happened said in the button. */
function addCopyButton(pre: HTMLElement): void {
  // The clipboard is there only in a secure context (https, or the loopback address): elsewhere the text is selected by a click.
  if (navigator.clipboard === undefined) return;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "secondary copy-button";
  button.textContent = "Copy";
  if (pre.id !== "") button.dataset.copies = pre.id;
  let reset: ReturnType<typeof setTimeout> | undefined;
  button.addEventListener("click", async () => {
    clearTimeout(reset);
    try {
      await navigator.clipboard.writeText(pre.textContent ?? "");
      button.textContent = "Copied";
    } catch {
      button.textContent = "Not copied: select the text";
    }
    reset = setTimeout(() => (button.textContent = "Copy"), COPIED_SHOWN_MS);
  });
  pre.after(button);
}

window.vraiConsole = { signWithWallet };
document.querySelectorAll<HTMLElement>("pre.copyable").forEach(addCopyButton);
const signInButton = document.getElementById("siwe-sign-in");
if (signInButton instanceof HTMLButtonElement) setUpSignIn(signInButton);
document.querySelectorAll<HTMLFormElement>("form[data-wallet-sign]").forEach(setUpWalletForm);
