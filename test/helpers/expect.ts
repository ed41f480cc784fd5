/**
 * chai's `expect` with Hardhat's chai matchers (`.revertedWithCustomError`, `.emit`, bigints compared with numbers),
 * for the contract tests. hardhat.config.ts does not load them: they would replace chai's assertions in every process
 * that loads Hardhat, the unit tests' included.
 */
import "@nomicfoundation/hardhat-chai-matchers";

export { expect } from "chai";
