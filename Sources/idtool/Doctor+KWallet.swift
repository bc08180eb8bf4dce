import Foundation
import Keyring

/// A KWallet daemon on the bus while nothing serves the Secret Service: which one, whether it
/// runs, and what kwalletrc says of its Secret Service API. doctor's advice depends on all three.
struct KWalletOnBus: Equatable, Sendable {
    /// "ksecretd" (KDE Frameworks 6.14 and later, which serves the Secret Service in place of
    /// kwalletd6, then a proxy), "kwalletd6" or "kwalletd5".
    var daemon: String
    /// True when it owns its name now; false when the bus could only start it.
    var isRunning: Bool
    /// kwalletrc's `[org.freedesktop.secrets] apiEnabled`; nil when the file does not set it
    /// (then it is on).
    var apiEnabled: Bool?

    /// The daemons, newest first (a Debian 14 system has ksecretd and the kwalletd6 proxy), with
    /// the bus names each owns or has activated: ksecretd's own and the one its package's
    /// activation file names.
    static let daemons: [(daemon: String, names: [String])] = [
        ("ksecretd", ["org.kde.ksecretd", "org.kde.secretservicecompat"]),
        ("kwalletd6", ["org.kde.kwalletd6"]),
        ("kwalletd5", ["org.kde.kwalletd5"]),
    ]

    /// The KWallet daemon the session bus has or can start, with kwalletrc's switch; nil when none.
    static func probe(environment: [String: String]) -> KWalletOnBus? {
        for (daemon, names) in daemons {
            let running = names.contains { BusProbe.hasOwner($0) == true }
            guard running || names.contains(where: BusProbe.isAvailable) else { continue }
            return KWalletOnBus(daemon: daemon, isRunning: running, apiEnabled: apiEnabled(environment: environment))
        }
        return nil
    }

    /// `[org.freedesktop.secrets] apiEnabled` in kwalletrc; nil when unset or unreadable.
    static func apiEnabled(environment: [String: String]) -> Bool? {
        KWalletConfig.bool("apiEnabled", in: "org.freedesktop.secrets", environment: environment)
    }

    /// doctor's Secret Service check for this daemon, when `service` has no owner.
    func check(service: String) -> DoctorCheck {
        let name = Doctor.secretService
        if apiEnabled == false {
            return .fail(
                name, "\(service) has no owner, but KWallet (\(daemon)) is on the bus",
                hint: "KWallet's Secret Service API is off: set apiEnabled=true under [org.freedesktop.secrets] "
                    + "in ~/.config/kwalletrc, then restart \(daemon) (or log in again)")
        }
        guard isRunning else {
            let activated = Self.daemons.first { $0.daemon == daemon }?.names.last ?? "org.kde.\(daemon)"
            return .fail(
                name, "\(service) has no owner; KWallet's \(daemon) is installed but not running",
                hint: "start \(daemon): log in to Plasma, or have the bus start it with "
                    + "`dbus-send --session --print-reply --dest=\(activated) / org.freedesktop.DBus.Peer.Ping`")
        }
        return .fail(
            name, "\(service) has no owner, though KWallet (\(daemon)) runs with its Secret Service API on in kwalletrc",
            hint: "restart \(daemon) (or log in again): it takes \(service) when it starts, unless another program holds it")
    }
}
