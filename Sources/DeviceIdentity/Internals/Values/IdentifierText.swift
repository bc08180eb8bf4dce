#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Rules for an identifier's text, shared by stores and migration sources.
enum IdentifierText {
    /// The longest identifier accepted, in UTF-8 bytes.
    static let maximumLength = 256

    /// Trims a BOM and surrounding whitespace, then validates. Returns nil with a reason when invalid.
    static func normalize(_ bytes: Data) -> Result<String, Rejection> {
        guard var text = String(validating: bytes, as: UTF8.self) else { return .failure(.init("it is not UTF-8 text")) }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        text = String(text.trimmingWhitespace())
        if let reason = problem(with: text) { return .failure(.init(reason)) }
        return .success(text)
    }

    /// Why `text` cannot be an identifier, or nil when it can.
    static func problem(with text: String) -> String? {
        if text.trimmingWhitespace().isEmpty { return "it is empty" }
        if text.trimmingWhitespace().count != text.count || text.hasPrefix("\u{FEFF}") {
            return "it has surrounding whitespace or a BOM"
        }
        if text.utf8.count > maximumLength { return "it is longer than \(maximumLength) bytes" }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "it contains control characters"
        }
        return nil
    }

    struct Rejection: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}

extension String {
    func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
