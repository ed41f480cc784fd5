/**
 * The reference ERC-8004 registries (`IdentityRegistryUpgradeable` and `ReputationRegistryUpgradeable`, the ones public
 * networks run), compiled, from the project's test data in test/fixtures/erc8004/, and their deployment behind their
 * ERC1967 proxies as the fixtures' README says (scripts/erc8004-reference.ts, which `vrai dev`'s chain uses too), for
 * tests on a chain reached through viem or JSON-RPC.
 */
export {
  deployReferenceIdentity,
  deployReferenceReputation,
  REFERENCE_IDENTITY,
  REFERENCE_REPUTATION,
  type ReferenceDeployer,
} from "../../scripts/erc8004-reference";
