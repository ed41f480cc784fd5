// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAnchorRegistry} from "../interfaces/IAnchorRegistry.sol";
import {VraiScores} from "../VraiScores.sol";

/// @dev Exposes the {VraiScores} library's internal functions to tests.
contract VraiScoresHarness {
    function leafHash(VraiScores.Score calldata score) external pure returns (bytes32) {
        return VraiScores.leafHash(score);
    }

    function verify(
        IAnchorRegistry registry,
        VraiScores.Score calldata score,
        bytes32[] calldata proof,
        bytes32 root
    ) external view returns (uint48 anchoredAt) {
        return VraiScores.verify(registry, score, proof, root);
    }

    function scoreDayV2Kind() external pure returns (bytes32) {
        return VraiScores.SCORE_DAY_V2_KIND;
    }
}
