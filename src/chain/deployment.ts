/**
 * `deployments/<network>.json`: where Vrai's contracts live on a chain. Written by scripts/deploy.ts (and
 * `vrai dev` through it); read here only, by the SDK, the indexer, anchoring and `vrai verify`.
 */
import fs from "node:fs";
import { getAddress, isAddress, type Address } from "viem";
import { z } from "zod";
import { InvalidInputError } from "../errors";

/** A 0x address (EIP-55 checked when mixed-case), read as its checksummed form. */
export const addressSchema = z
  .string({ error: "is not an address" })
  .refine((value) => isAddress(value), { error: "is not an address" })
  .transform((value): Address => getAddress(value));

const contractSchema = z.object({
  address: addressSchema,
  /**
   * The block the contract was deployed in: by this deployment's transaction, or, for a contract it reused (the
   * identity registry), before it (scripts/deploy.ts finds it); null when unknown, as files written before recorded it.
   */
  blockNumber: z
    .number({ error: "is not a block number" })
    .int({ error: "is not a block number" })
    .nonnegative({ error: "is not a block number" })
    .nullish(),
  txHash: z.string({ error: "is not a transaction hash" }).nullish(),
  reused: z.boolean({ error: "is not a boolean" }).optional(),
  /** The contract this run deployed at the address (e.g. `AgentIdentity` as the identity registry). */
  contractName: z.string({ error: "is not a contract name" }).optional(),
});

const accountsSchema = z.array(addressSchema, { error: "is not a list of addresses" });

/**
 * The deployment file. Only what every writer writes is required: `network`, `chainId` and the three
 * contracts' addresses; the rest is what scripts/deploy.ts adds.
 */
export const deploymentSchema = z.object(
  {
    network: z.string({ error: "is not a network name" }),
    chainId: z
      .number({ error: "is not a positive integer" })
      .int({ error: "is not a positive integer" })
      .positive({ error: "is not a positive integer" }),
    /** RFC 3339 time of the deployment. */
    deployedAt: z.string({ error: "is not a time" }).optional(),
    deployer: addressSchema.optional(),
    contracts: z.object(
      {
        IdentityRegistry: contractSchema,
        AnchorRegistry: contractSchema,
        Registry: contractSchema,
        /** The ERC-8004 reputation registry Vrai gives feedback to, for IdentityRegistry's agents; absent in files written before. */
        ReputationRegistry: contractSchema.optional(),
      },
      { error: "is not an object" },
    ),
    /** The accounts granted each role at deployment. */
    roles: z
      .object(
        {
          AnchorRegistry: z.object({ DEFAULT_ADMIN_ROLE: accountsSchema, ANCHORER_ROLE: accountsSchema, VERIFIER_ROLE: accountsSchema }),
          Registry: z.object({ DEFAULT_ADMIN_ROLE: accountsSchema, PLATFORM_ROLE: accountsSchema }),
        },
        { error: "is not an object" },
      )
      .optional(),
  },
  { error: "is not a deployment (a JSON object)" },
);

/** A deployment file as written (JSON), what scripts/deploy.ts must produce. */
export type DeploymentJson = z.input<typeof deploymentSchema>;

/** A deployment file as read: validated, addresses checksummed. */
export type Deployment = z.output<typeof deploymentSchema>;

/** One contract of a deployment. */
export type DeployedContract = Deployment["contracts"]["Registry"];

/** A deployment file that cannot be read or does not have the documented shape; the message names the file and the field. */
export class DeploymentFileError extends InvalidInputError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("invalid_deployment", message, options);
  }
}

/**
 * Validates the content of a deployment file.
 * @param file names the file in errors
 * @throws DeploymentFileError `<file>: <field> <what is wrong>`, every wrong field, `; ` between them
 * @example parseDeployment(JSON.parse(text), "deployments/localhost.json").contracts.Registry.address
 */
export function parseDeployment(json: unknown, file: string): Deployment {
  const parsed = deploymentSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map(({ path, message }) => {
    if (path.length === 0) return message;
    // A contract that is not an object (or is missing) is reported at its address, the field every reader looks for.
    if (path.length === 2 && path[0] === "contracts") return `${path.join(".")}.address is not an address`;
    return `${path.join(".")} ${message}`;
  });
  throw new DeploymentFileError(`${file}: ${problems.join("; ")}`, { cause: parsed.error });
}

/**
 * Reads and validates a deployment file.
 * @throws DeploymentFileError `<file>: <why>` when it cannot be read or is not JSON, else as `parseDeployment`
 * @example const registry = readDeployment("deployments/localhost.json").contracts.Registry.address;
 */
export function readDeployment(file: string): Deployment {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (error) {
    throw new DeploymentFileError(`${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return parseDeployment(json, file);
}

/** What a follower of the contracts (the indexer) needs: the chain, the registries' addresses and the block to start from. */
export type FollowedDeployment = {
  chainId: number;
  contracts: { registry: Address; anchorRegistry: Address; identityRegistry: Address };
  /**
   * The earliest deployment block of the followed contracts: a reused identity registry's own block when the file
   * records it, so its transfers are read from its start; else the first of the contracts the deployment created.
   */
  startBlock: number;
};

/**
 * Reads a deployment file for the indexer.
 * @throws DeploymentFileError as `readDeployment`, and when no contract has a deployment block
 * @example const { contracts, startBlock } = readFollowedDeployment("deployments/localhost.json");
 */
export function readFollowedDeployment(file: string): FollowedDeployment {
  const { chainId, contracts } = readDeployment(file);
  const { IdentityRegistry, AnchorRegistry, Registry } = contracts;
  const blocks = [Registry.blockNumber, AnchorRegistry.blockNumber, IdentityRegistry.blockNumber].filter(
    (block) => typeof block === "number",
  );
  if (blocks.length === 0)
    throw new DeploymentFileError(`${file}: contracts.Registry.blockNumber is missing: the indexer starts from the deployment block`);
  return {
    chainId,
    contracts: { registry: Registry.address, anchorRegistry: AnchorRegistry.address, identityRegistry: IdentityRegistry.address },
    startBlock: Math.min(...blocks),
  };
}
