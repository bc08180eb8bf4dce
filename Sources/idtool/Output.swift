import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Raw stdin/stdout/stderr access. Data goes to stdout, byte for byte; diagnostics go to stderr
/// as exactly one line.
enum Output {
    /// Writes `bytes` to stdout exactly. Returns false when stdout is closed or full.
    @discardableResult
    static func write(_ bytes: some Collection<UInt8>, to fd: Int32 = STDOUT_FILENO) -> Bool {
        let buffer = Array(bytes)
        var offset = 0
        return buffer.withUnsafeBytes { raw -> Bool in
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// Writes `text` to stdout as UTF-8, exactly.
    @discardableResult
    static func print(_ text: String) -> Bool {
        write(Array(text.utf8))
    }

    /// Prints `idtool: <message>` as one line on stderr. Newlines in `message` become spaces.
    static func error(_ message: String) {
        let line = message.map { $0.isNewline ? " " : String($0) }.joined()
        write(Array("idtool: \(line)\n".utf8), to: STDERR_FILENO)
    }

    /// Reports a keyring failure on stderr (its description says what failed and what to do)
    /// and returns the exit status that fits it.
    static func fail(_ error: KeyringError) -> Int32 {
        Self.error(error.description + lockedKeyringsNote(error))
        return ExitCode(error).rawValue
    }

    /// After a locked error, which keyrings are locked, so that a user with several knows which one to
    /// unlock (KeePassXC hides a locked database's items: its name is all there is to go on).
    /// Read-only, never prompts, and given a short timeout of its own: it only adds to the message.
    static func lockedKeyringsNote(_ error: KeyringError) -> String {
        guard case .locked = error else { return "" }
        let locked = Keyring(timeout: .seconds(2), unlock: .never).status().collections.filter(\.isLocked)
        guard !locked.isEmpty else { return "" }
        return " (locked: " + locked.map { $0.label.isEmpty ? "(no label)" : "\"\($0.label)\"" }.joined(separator: ", ") + ")"
    }

    /// Prints a usage error: one line, then (for status 64) the command's usage, all on stderr.
    static func fail(_ error: UsageError) -> Int32 {
        Self.error(error.message)
        if error.status == .usage {
            write(Array(Usage.text(for: error.topic).utf8), to: STDERR_FILENO)
        }
        return error.status.rawValue
    }

    /// Why `readStandardInput` failed.
    enum InputError: Error {
        case tooLarge(limit: Int)
        case unreadable(errno: Int32)
    }

    /// Reads all of stdin as bytes, refusing more than `limit` bytes.
    static func readStandardInput(limit: Int) throws(InputError) -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(errno: errno)
            }
            if count == 0 { return data }
            data.append(contentsOf: chunk[..<count])
            if data.count > limit { throw .tooLarge(limit: limit) }
        }
    }
}

/// A minimal JSON writer with a fixed key order, so `--json` output is stable.
indirect enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    /// Keys are written in this order.
    case object([(String, JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool { lhs.serialized == rhs.serialized }

    /// Compact JSON text, without a trailing newline.
    var serialized: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let value):
            return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let value): return Self.quote(value)
        case .array(let values): return "[" + values.map(\.serialized).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { Self.quote($0.0) + ":" + $0.1.serialized }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
