// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAnchorRegistry} from "../interfaces/IAnchorRegistry.sol";
import {IERC8004IdentityRegistry} from "../interfaces/IERC8004IdentityRegistry.sol";
import {VraiScores} from "../VraiScores.sol";

/**
 * @title VraiGate
 * @notice An example of a contract gating on a Vrai Score: {enter} is open only to an agent whose daily score,
 * proven against a root anchored in the AnchorRegistry ({VraiScores-verify}), is at least a threshold, established,
 * anchored on the score's own day and recently, and belongs to the caller's ERC-8004 identity: the caller owns the
 * identity token the score names, or is its agent wallet, in this gate's identity registry on this chain.
 * @dev The arguments of {enter} and {check} are what `GET /v1/agents/{id}/score/proof` returns (`leafFields`,
 * `proof`, `root`), or the SDK's `getScoreProof(...).args`.
 */
contract VraiGate {
    IAnchorRegistry private immutable _anchors;
    IERC8004IdentityRegistry private immutable _identityRegistry;
    uint16 private immutable _minTotal;
    uint48 private immutable _maxAge;

    /// @notice `account` entered with a score of ERC-8004 agent `erc8004TokenId`.
    event Entered(address indexed account, uint256 indexed erc8004TokenId);

    /// @notice The score's root was anchored more than the gate's maximum age ago.
    error VraiGateStaleScore(uint48 anchoredAt, uint48 maxAge);

    /// @notice The score's day is not the day its root was anchored: a day's root is anchored right after that day's
    /// 00:00 UTC recompute, so this is an old score anchored late (a catch-up), whose anchor time says nothing of it.
    error VraiGateScoreOfAnotherDay(uint32 day, uint256 anchoredDay);

    /// @notice The score is provisional (METHOD V8).
    error VraiGateScoreNotEstablished(string agent);

    /// @notice The score's total is under the gate's threshold.
    error VraiGateScoreBelowThreshold(uint16 total, uint16 minTotal);

    /// @notice The score names no ERC-8004 identity of this gate's registry on this chain.
    error VraiGateIdentityNotInRegistry(uint256 erc8004ChainId, address erc8004Registry);

    /// @notice `account` neither owns ERC-8004 identity `erc8004TokenId` nor is its agent wallet.
    error VraiGateNotIdentityHolder(address account, uint256 erc8004TokenId);

    /**
     * @param anchors The AnchorRegistry where Vrai anchors its days of scores.
     * @param identityRegistry The ERC-8004 identity registry of this chain whose identities may enter.
     * @param minTotal The lowest total that enters.
     * @param maxAge The oldest anchor that enters, in seconds.
     */
    constructor(IAnchorRegistry anchors, IERC8004IdentityRegistry identityRegistry, uint16 minTotal, uint48 maxAge) {
        _anchors = anchors;
        _identityRegistry = identityRegistry;
        _minTotal = minTotal;
        _maxAge = maxAge;
    }

    /**
     * @notice The gated function: emits {Entered} when the caller passes {check}.
     * @param score The leaf's values.
     * @param proof Its Merkle proof.
     * @param root The day's root.
     */
    function enter(VraiScores.Score calldata score, bytes32[] calldata proof, bytes32 root) external {
        check(score, proof, root);
        emit Entered(msg.sender, score.erc8004TokenId);
    }

    /**
     * @notice Checks that the caller may enter with `score`, and returns when its root was anchored; reverts otherwise.
     *
     * Requirements:
     * - `score` is proven under `root`, anchored as a day of version-2 scores ({VraiScores-verify});
     * - the score's day is the day its root was anchored, at most the gate's maximum age ago;
     * - the score is established, and its total is at least the gate's threshold;
     * - its ERC-8004 identity is of this gate's registry on this chain, owned by the caller or with the caller as
     *   its agent wallet.
     *
     * @param score The leaf's values.
     * @param proof Its Merkle proof.
     * @param root The day's root.
     * @return anchoredAt The block timestamp of the score's root's anchor.
     */
    function check(
        VraiScores.Score calldata score,
        bytes32[] calldata proof,
        bytes32 root
    ) public view returns (uint48 anchoredAt) {
        anchoredAt = VraiScores.verify(_anchors, score, proof, root);
        uint256 anchoredDay = anchoredAt / 1 days;
        if (score.day != anchoredDay) revert VraiGateScoreOfAnotherDay(score.day, anchoredDay);
        if (block.timestamp - anchoredAt > _maxAge) revert VraiGateStaleScore(anchoredAt, _maxAge);
        if (score.state != VraiScores.ESTABLISHED) revert VraiGateScoreNotEstablished(score.agent);
        if (score.total < _minTotal) revert VraiGateScoreBelowThreshold(score.total, _minTotal);
        if (score.erc8004ChainId != block.chainid || score.erc8004Registry != address(_identityRegistry)) {
            revert VraiGateIdentityNotInRegistry(score.erc8004ChainId, score.erc8004Registry);
        }
        uint256 tokenId = score.erc8004TokenId;
        // The owner costs one call, the agent wallet two.
        if (_identityRegistry.ownerOf(tokenId) != msg.sender && _identityRegistry.getAgentWallet(tokenId) != msg.sender) {
            revert VraiGateNotIdentityHolder(msg.sender, tokenId);
        }
    }

    /**
     * @notice What the gate asks of a score.
     * @return anchors The AnchorRegistry it reads.
     * @return identityRegistry The ERC-8004 identity registry whose identities may enter.
     * @return minTotal The lowest total that enters.
     * @return maxAge The oldest anchor that enters, in seconds.
     */
    function requirements()
        external
        view
        returns (IAnchorRegistry anchors, IERC8004IdentityRegistry identityRegistry, uint16 minTotal, uint48 maxAge)
    {
        return (_anchors, _identityRegistry, _minTotal, _maxAge);
    }
}
