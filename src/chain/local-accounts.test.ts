import { expect } from "chai";
import { toHex } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { LOCAL_ACCOUNT_KEYS } from "./local-accounts";

describe("the local accounts (Hardhat's default mnemonic)", () => {
  it("are the mnemonic's twenty accounts, m/44'/60'/0'/0/0 to /19, in order", () => {
    expect(LOCAL_ACCOUNT_KEYS).to.have.length(20);
    LOCAL_ACCOUNT_KEYS.forEach((key, i) => {
      const derived = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: i });
      expect(key, `account ${i}`).to.equal(toHex(derived.getHdKey().privateKey!));
      expect(privateKeyToAccount(key).address, `account ${i}`).to.equal(derived.address);
    });
  });
});
