import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// systemd's app-specific machine ID: HMAC-SHA256 keyed by the machine ID over the app key,
/// truncated to 128 bits and stamped as a v4 UUID. Equal to
/// `systemd-id128 machine-id --app-specific=KEY`. The raw machine ID never leaves this type.
public enum AppSpecificMachineID {
    /// Why the app-specific machine ID cannot be derived.
    public struct Unavailable: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, without the machine ID itself.
        public let reason: String
        /// The reason, e.g. "/etc/machine-id is all zeros".
        public var description: String { reason }
    }

    /// Derives the app-specific ID in systemd's plain form (32 lowercase hex digits).
    /// - Parameters:
    ///   - appKey: a 128-bit key as a UUID, dashed or not, any case.
    ///   - machineIDPath: the machine ID file.
    /// - Returns: 32 lowercase hex digits, as `systemd-id128` prints them.
    /// - Throws: `Unavailable` for a bad key or a missing, empty or all-zero machine ID.
    public static func plainHex(appKey: String, machineIDPath: String = "/etc/machine-id") throws(Unavailable) -> String {
        try derive(appKey: appKey, machineIDPath: machineIDPath).plainHex
    }

    static func derive(appKey: String, machineIDPath: String) throws(Unavailable) -> UUIDBytes {
        guard let key = UUIDBytes.parse(appKey) else {
            throw Unavailable(reason: "the app key is not a 128-bit UUID (32 hex digits, dashed or not)")
        }
        let machine = try machineID(at: machineIDPath)
        guard let digest = Digest.hmacSHA256(key: machine.bytes, message: key.bytes) else {
            throw Unavailable(reason: "GLib could not create an HMAC")
        }
        var result = UUIDBytes(Array(digest.prefix(16)))
        result.stamp(version: 4)
        return result
    }

    private static func machineID(at path: String) throws(Unavailable) -> UUIDBytes {
        // The machine ID is 33 bytes; 4 KiB is plenty.
        guard case .success(let contents) = FileReading.contents(of: path, limit: 4096), let data = contents else {
            throw Unavailable(reason: "\(path) is missing or unreadable")
        }
        guard let text = String(data: data, encoding: .utf8)?.trimmingWhitespace(), !text.isEmpty else {
            throw Unavailable(reason: "\(path) is empty")
        }
        guard text.utf8.count == 32, let id = UUIDBytes.parse(String(text)) else {
            throw Unavailable(reason: "\(path) does not hold a machine ID (e.g. \"uninitialized\")")
        }
        if id.bytes.allSatisfy({ $0 == 0 }) { throw Unavailable(reason: "\(path) is all zeros") }
        return id
    }
}
