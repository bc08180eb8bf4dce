#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// 16 bytes with UUID formatting and the version/variant bits set.
struct UUIDBytes: Equatable {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        precondition(bytes.count == 16)
        self.bytes = bytes
    }

    /// Random bytes from the system CSPRNG (getrandom), with version and RFC 9562 variant.
    static func random(version: UInt8) -> UUIDBytes {
        var generator = SystemRandomNumberGenerator()
        var uuid = UUIDBytes((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        uuid.stamp(version: version)
        return uuid
    }

    /// RFC 9562 version 7: 48-bit big-endian Unix milliseconds, then random bits.
    static func timeOrdered(now: Date) -> UUIDBytes {
        var uuid = random(version: 7)
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        for index in 0..<6 { uuid.bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        return uuid
    }

    mutating func stamp(version: UInt8) {
        bytes[6] = bytes[6] & 0x0F | (version << 4)
        bytes[8] = bytes[8] & 0x3F | 0x80
    }

    /// 32 lowercase hex digits, systemd's id128 form.
    var plainHex: String { bytes.map { Self.hex($0) }.joined() }

    /// 8-4-4-4-12 lowercase.
    var canonical: String {
        let hex = plainHex
        var out = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { out.append("-") }
            out.append(character)
        }
        return out
    }

    /// Parses 32 hex digits, optionally in 8-4-4-4-12 form, any case.
    static func parse(_ text: String) -> UUIDBytes? {
        var digits = Array(text.utf8)
        if digits.count == 36 {
            guard [8, 13, 18, 23].allSatisfy({ digits[$0] == UInt8(ascii: "-") }) else { return nil }
            digits.removeAll { $0 == UInt8(ascii: "-") }
        }
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return UUIDBytes(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
