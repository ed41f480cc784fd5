import { expect } from "chai";
import { createWalletClient, custom, encodeFunctionData, type Hex } from "viem";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { anchorRegistryAbi } from "./abi/anchorRegistry";
import { createAccountLocks, createTxSigner, type SignedTransaction } from "./signer";

describe("transaction signers (in-process Hardhat chain)", () => {
  let chain: TestChain;
  before(async () => {
    chain = await startTestChain();
  });
  after(() => chain.close());

  /** A second wallet client of account 2, as a second writer configured with the same key has. */
  const sameKeyAgain = () =>
    createWalletClient({
      chain: chain.chain,
      account: chain.accounts[2],
      transport: custom({ request: (args) => chain.publicClient.request(args as never) }),
    });

  it("signs the transactions of two writers of one key at distinct nonces, each stored before it is sent", async () => {
    const locks = createAccountLocks();
    const writers = [chain.walletClients[2], sameKeyAgain()].map((walletClient) =>
      createTxSigner({ walletClient, publicClient: chain.publicClient }, locks),
    );
    const start = await chain.publicClient.getTransactionCount({ address: chain.accounts[2].address });
    const stored: Array<{ tx: SignedTransaction; sentBefore: boolean }> = [];
    const sends = Array.from({ length: 8 }, (_, i) =>
      writers[i % 2].send({ to: chain.accounts[3].address, data: "0x" }, async (tx) => {
        const known = await chain.publicClient.getTransaction({ hash: tx.txHash }).then(
          () => true,
          () => false,
        );
        stored.push({ tx, sentBefore: known });
        return true;
      }),
    );
    const sent = await Promise.all(sends);
    expect(sent.every((s) => s.sent)).to.equal(true);
    expect(sent.map((s) => s.nonce).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 8 }, (_, i) => start + i));
    expect(stored.map((s) => s.sentBefore)).to.deep.equal(Array(8).fill(false));
    for (const { txHash } of sent) expect((await chain.publicClient.getTransactionReceipt({ hash: txHash })).status).to.equal("success");
  });

  it("sends nothing that its sender did not store, and signs nothing for a call that reverts", async () => {
    const signer = createTxSigner({ walletClient: chain.walletClients[2], publicClient: chain.publicClient });
    const before = await chain.publicClient.getTransactionCount({ address: chain.accounts[2].address, blockTag: "pending" });
    const refused = await signer.send({ to: chain.accounts[3].address, data: "0x" }, async () => false);
    expect(refused.sent).to.equal(false);
    expect(await chain.publicClient.getTransaction({ hash: refused.txHash }).catch(() => null)).to.equal(null);

    const registry = (await chain.deployContract("AnchorRegistry", [chain.accounts[0].address])).address;
    const afterDeploy = await chain.publicClient.getTransactionCount({ address: chain.accounts[2].address, blockTag: "pending" });
    const records: Hex[] = [];
    // Account 2 holds no role: anchorRoot reverts, found when the node estimates its gas.
    const data = encodeFunctionData({
      abi: anchorRegistryAbi,
      functionName: "anchorRoot",
      args: [`0x${"11".repeat(32)}`, 1n, `0x${"22".repeat(32)}`],
    });
    const error = await signer
      .send({ to: registry, data }, async (tx) => {
        records.push(tx.txHash);
        return true;
      })
      .catch((e: Error) => e);
    expect(error).to.be.instanceOf(Error);
    expect((error as Error).message).to.match(/AccessControlUnauthorizedAccount|reverted/);
    expect(records).to.deep.equal([]);
    expect(afterDeploy).to.equal(before);
    expect(await chain.publicClient.getTransactionCount({ address: chain.accounts[2].address, blockTag: "pending" })).to.equal(before);
  });
});
