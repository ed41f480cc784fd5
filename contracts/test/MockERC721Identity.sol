// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";

/**
 * @notice Test-only stand-in for a third-party ERC-8004 identity registry: a plain ERC-721 with a
 * public mint. The proof verifier relies on `ownerOf` only, so this proves it works with any registry.
 */
contract MockERC721Identity is ERC721 {
    constructor() ERC721("Mock Agent Identity", "MAID") {}

    /// @notice Mints `agentId` to `to`; anyone may call it (test-only).
    function mint(address to, uint256 agentId) external {
        _mint(to, agentId);
    }
}
