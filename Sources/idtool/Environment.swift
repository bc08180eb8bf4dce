#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Single environment variables, read without building `ProcessInfo.processInfo.environment`.
///
/// That dictionary copies and hashes every variable: about 0.6 M instructions at each start, more
/// than the rest of `idtool --version`. Most commands read one variable, so they read just that.
enum Environment {
    /// The value `ProcessInfo.processInfo.environment[name]` holds, found the same way: entries
    /// split at their first "=", the last entry with this name winning.
    static func value(_ name: String) -> String? {
        var value: String?
        name.withCString { wanted in
            let length = strlen(wanted)
            var entry = environ
            while let pointer = entry.pointee {
                // Only entries that start with the name's bytes can carry it; the rest are skipped unread.
                if strncmp(pointer, wanted, length) == 0 {
                    let text = String(cString: pointer)
                    if let equals = text.firstIndex(of: "="), text[..<equals] == name {
                        value = String(text[text.index(after: equals)...])
                    }
                }
                entry += 1
            }
        }
        return value
    }
}
