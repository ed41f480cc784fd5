// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/**
 * @notice Test-only smart-contract wallet: a signature is valid when its single owner signed the hash.
 * @dev Stands in for a contract wallet (Safe, Kernel, ...) in the identity-proof tests (V6), so the
 * service's EIP-1271 path runs against a real `isValidSignature` on a real chain.
 */
contract MockERC1271Wallet is IERC1271 {
    /// @dev `IERC1271.isValidSignature.selector`: the EIP-1271 magic value.
    bytes4 private constant _MAGIC_VALUE = 0x1626ba7e;

    address private immutable _owner;

    constructor(address owner_) {
        _owner = owner_;
    }

    /// @notice The key that signs for this wallet.
    function owner() external view returns (address) {
        return _owner;
    }

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4 magicValue) {
        (address recovered, ECDSA.RecoverError error, ) = ECDSA.tryRecover(hash, signature);
        if (error == ECDSA.RecoverError.NoError && recovered == _owner) return _MAGIC_VALUE;
        return 0xffffffff;
    }
}
