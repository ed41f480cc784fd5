// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @dev Test-only ERC-1271 contract wallet: a signature is valid when its owner signed the hash.
contract ERC1271OwnerWallet is IERC1271 {
    address private immutable _owner;

    constructor(address owner) {
        _owner = owner;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address recovered, ECDSA.RecoverError recoverError, ) = ECDSA.tryRecoverCalldata(hash, signature);
        return recoverError == ECDSA.RecoverError.NoError && recovered == _owner ? this.isValidSignature.selector : bytes4(0);
    }
}
