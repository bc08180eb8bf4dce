#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a new identifier is made, used only after every store proved it holds none.
public struct GenerationPolicy: Sendable, CustomStringConvertible {
    indirect enum Kind: Sendable {
        case randomUUID
        case timeOrderedUUID
        case appSpecificMachineID(appKey: String, machineIDPath: String)
        case firstAvailable([GenerationPolicy])
        case custom(name: String, generate: @Sendable () throws -> String)
    }

    let kind: Kind

    /// A random version 4 UUID, lowercase and canonical. The default.
    public static let randomUUID = GenerationPolicy(kind: .randomUUID)

    /// A version 7 UUID (RFC 9562): sortable by creation time, which it therefore reveals
    /// to anyone who sees the identifier (to the millisecond).
    public static let timeOrderedUUID = GenerationPolicy(kind: .timeOrderedUUID)

    /// systemd's app-specific machine ID (`sd_id128_get_machine_app_specific`), as a
    /// lowercase UUID: stable for this machine and app, and unlinkable across apps. The raw
    /// machine ID is never exposed. Unavailable when `/etc/machine-id` is missing, empty or
    /// all zeros, as in many containers.
    /// - Parameters:
    ///   - appKey: the app's 128-bit key, as a UUID (dashed or not, any case).
    ///   - machineIDPath: where to read the machine ID; tests point it elsewhere.
    /// - Returns: the policy.
    public static func appSpecificMachineID(appKey: String, machineIDPath: String = "/etc/machine-id") -> GenerationPolicy {
        GenerationPolicy(kind: .appSpecificMachineID(appKey: appKey, machineIDPath: machineIDPath))
    }

    /// The first of `policies` that is available on this machine.
    /// - Parameter policies: tried in order; an unavailable one falls through to the next.
    /// - Returns: the policy.
    public static func firstAvailable(_ policies: [GenerationPolicy]) -> GenerationPolicy {
        GenerationPolicy(kind: .firstAvailable(policies))
    }

    /// A caller-supplied generator. Its result must pass the identifier rules (non-empty, no
    /// control characters, at most 256 bytes).
    /// - Parameters:
    ///   - name: names the policy in provenance and errors.
    ///   - generate: makes a new identifier; throwing makes the policy unavailable.
    /// - Returns: the policy.
    /// - Throws: nothing here; the generator's errors, and invalid values, surface from
    ///   `generate()` as `IdentityError.policyUnavailable`.
    public static func custom(name: String, _ generate: @escaping @Sendable () throws -> String) -> GenerationPolicy {
        GenerationPolicy(kind: .custom(name: name, generate: generate))
    }

    /// The policy's name, e.g. `randomUUID` or `firstAvailable(appSpecificMachineID, randomUUID)`.
    public var description: String {
        switch kind {
        case .randomUUID: return "randomUUID"
        case .timeOrderedUUID: return "timeOrderedUUID"
        case .appSpecificMachineID: return "appSpecificMachineID"
        case .firstAvailable(let policies): return "firstAvailable(\(policies.map(\.description).joined(separator: ", ")))"
        case .custom(let name, _): return "custom(\(name))"
        }
    }

    /// Makes a new identifier.
    /// - Returns: the identifier and the name of the policy that actually made it.
    /// - Throws: `IdentityError.policyUnavailable` when this policy cannot run here.
    public func generate() throws(IdentityError) -> (value: String, policy: String) {
        switch kind {
        case .randomUUID:
            return (UUIDBytes.random(version: 4).canonical, description)
        case .timeOrderedUUID:
            return (UUIDBytes.timeOrdered(now: Date()).canonical, description)
        case .appSpecificMachineID(let appKey, let path):
            do {
                return (try AppSpecificMachineID.derive(appKey: appKey, machineIDPath: path).canonical, description)
            } catch {
                throw .policyUnavailable(policy: description, reason: error.reason)
            }
        case .firstAvailable(let policies):
            var reasons: [String] = []
            for policy in policies {
                do { return try policy.generate() } catch { reasons.append(error.description) }
            }
            throw .policyUnavailable(
                policy: description, reason: reasons.isEmpty ? "no policies given" : reasons.joined(separator: "; "))
        case .custom(_, let generate):
            let value: String
            do { value = try generate() } catch {
                throw .policyUnavailable(policy: description, reason: "the generator threw \(type(of: error))")
            }
            if let problem = IdentifierText.problem(with: value) {
                throw .policyUnavailable(policy: description, reason: "the generated value is invalid: \(problem)")
            }
            return (value, description)
        }
    }
}
