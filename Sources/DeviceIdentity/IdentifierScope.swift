/// Whose identifier this is: one app's, or one shared by a vendor's apps (like identifierForVendor).
///
/// On Linux a vendor group is a shared namespace, not an access-control boundary: any process of
/// the same user can read it.
public enum IdentifierScope: Sendable, Hashable, CustomStringConvertible {
    /// An identifier that belongs to one app, e.g. `com.example.editor`.
    case app(String)
    /// An identifier shared by every app that names the same vendor group, e.g. `com.example`.
    case vendor(String)

    /// The app ID or vendor group.
    public var name: String {
        switch self {
        case .app(let name), .vendor(let name): return name
        }
    }

    /// `app` or `vendor`, as stored in the `identity-scope` keyring attribute.
    public var kind: String {
        switch self {
        case .app: return "app"
        case .vendor: return "vendor"
        }
    }

    /// E.g. `app com.example.editor`.
    public var description: String { "\(kind) \(name)" }

    /// The keyring attributes the identifier is stored under. They carry no `service` attribute,
    /// so no `SecretStore` item can ever match them.
    public var keyringAttributes: [String: String] {
        ["identity-scope": kind, "identity-name": name]
    }

    /// Checks that the name is usable as a keyring attribute and as a directory name.
    func validate() throws(IdentityError) {
        let what = kind == "app" ? "app ID" : "vendor group"
        if name.isEmpty { throw .invalidArgument("the \(what) is empty") }
        if name.utf8.count > 255 { throw .invalidArgument("the \(what) is longer than 255 bytes") }
        if name == "." || name == ".." || name.contains("/") {
            throw .invalidArgument("the \(what) must not be \".\", \"..\" or contain \"/\"")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw .invalidArgument("the \(what) contains control characters")
        }
    }
}
