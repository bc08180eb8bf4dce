import Foundation
import Keyring
import Testing

@testable import idtool

/// `idtool doctor`'s verdicts, from synthetic `ServiceStatus` values: no keyring needed.
@Suite("doctor checks")
struct DoctorTests {
    let busEnv = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/x"]

    func status(reachable: Bool = true, provider: String? = "gnome-keyring-daemon", collection: Bool = true,
                locked: Bool = false, problem: KeyringError? = nil) -> KeyringProbe {
        KeyringProbe(isReachable: reachable, provider: provider, hasDefaultCollection: collection, isLocked: locked,
                      defaultCollectionLabel: collection ? "Login" : nil, problem: problem)
    }

    @Test("a healthy keyring passes all four checks and exits 0")
    func healthy() {
        let checks = Doctor.keyringChecks(status(), environment: busEnv)
        #expect(checks.map(\.name) == ["session bus", "secret service", "default collection", "default collection unlocked"])
        #expect(checks.allSatisfy { $0.ok })
        #expect(checks[1].detail.contains("gnome-keyring-daemon"))
        #expect(Doctor.exitStatus(checks) == .ok)
        #expect(Doctor.text(checks).split(separator: "\n").allSatisfy { $0.hasPrefix("ok ") })
    }

    @Test("collections: each keyring with its lock state, the default first; a locked second one fails nothing")
    func listsCollections() {
        var probe = status()
        #expect(Doctor.collectionsCheck(probe).isEmpty, "nothing listed when the status has no collections")
        probe.collections = [
            CollectionStatus(label: "Work", isLocked: false, isDefault: true), CollectionStatus(label: "", isLocked: false, isDefault: false),
            CollectionStatus(label: "Default keyring", isLocked: true, isDefault: false),
        ]
        let checks = Doctor.collectionsCheck(probe)
        #expect(checks.map(\.name) == ["collections"])
        #expect(checks.allSatisfy { $0.ok })
        #expect(checks.first?.detail == #"3: "Work" (default, unlocked), (no label) (unlocked), "Default keyring" (locked)"#)
        #expect(Doctor.exitStatus(Doctor.keyringChecks(probe, environment: busEnv) + checks) == .ok)
    }

    @Test("no session bus fails every check and exits 69")
    func noBus() {
        let checks = Doctor.keyringChecks(
            status(reachable: false, provider: nil, collection: false, problem: .noSessionBus(detail: "gone")), environment: [:])
        #expect(checks.count == 4)
        #expect(checks.allSatisfy { !$0.ok && $0.hint != nil })
        #expect(Doctor.exitStatus(checks) == .unavailable)
    }

    @Test("the provider is named with its product: kwalletd5 is KWallet")
    func namesKWallet() {
        let checks = Doctor.keyringChecks(status(provider: "kwalletd5"), environment: busEnv)
        #expect(checks[1].detail == "provided by kwalletd5 (KWallet)")
        #expect(Doctor.keyringChecks(status(), environment: busEnv)[1].detail == "provided by gnome-keyring-daemon (GNOME Keyring)")
        #expect(Doctor.describe(provider: "ksecretd") == "ksecretd (KWallet)")
        #expect(Doctor.describe(provider: "oo7-daemon") == "oo7-daemon (oo7)")
    }

    @Test("no Secret Service while KWallet is on the bus: the fix is kwalletrc's apiEnabled")
    func kwalletWithoutSecretService() {
        var probe = status(reachable: false, provider: nil, collection: false, problem: .noSecretService)
        probe.kwallet = KWalletOnBus(daemon: "kwalletd5", isRunning: true, apiEnabled: false)
        let checks = Doctor.keyringChecks(probe, environment: busEnv)
        #expect(checks.map(\.ok) == [true, false, false, false])
        #expect(checks[1].hint?.contains("apiEnabled=true under [org.freedesktop.secrets]") == true, "\(checks[1])")
        #expect(checks[1].hint?.contains("restart kwalletd5") == true, "\(checks[1])")
        #expect(Doctor.exitStatus(checks) == .unavailable)
    }

    // Issue 34: doctor said "KWallet's Secret Service API is off" whenever a KWallet daemon was on
    // the bus, also when ksecretd was simply not running.
    @Test(
        "no Secret Service while KWallet's daemon is not running or its API is on: doctor says so, never that the API is off",
        arguments: [
            (KWalletOnBus(daemon: "ksecretd", isRunning: false, apiEnabled: nil), "ksecretd is installed but not running", "--dest=org.kde.secretservicecompat"),
            (KWalletOnBus(daemon: "kwalletd6", isRunning: false, apiEnabled: true), "kwalletd6 is installed but not running", "--dest=org.kde.kwalletd6"),
            (KWalletOnBus(daemon: "ksecretd", isRunning: true, apiEnabled: nil), "KWallet (ksecretd) runs with its Secret Service API on", "restart ksecretd"),
        ])
    func kwalletNotServing(kwallet: KWalletOnBus, detail: String, hint: String) {
        var probe = status(reachable: false, provider: nil, collection: false, problem: .noSecretService)
        probe.kwallet = kwallet
        let check = Doctor.keyringChecks(probe, environment: busEnv)[1]
        #expect(!check.ok)
        #expect(check.detail.contains(detail), "\(check)")
        #expect(check.hint?.contains(hint) == true, "\(check)")
        #expect(check.hint?.contains("is off") == false, "\(check)")
    }

    @Test("kwalletrc's apiEnabled is read as KConfig reads it, from [org.freedesktop.secrets] only")
    func kwalletrcApiEnabled() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("kwalletrc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let environment = ["XDG_CONFIG_HOME": home.path]
        #expect(KWalletOnBus.apiEnabled(environment: environment) == nil)
        for (text, expected) in [
            ("[Wallet]\napiEnabled=false\n", nil),
            ("[Wallet]\napiEnabled=false\n\n[org.freedesktop.secrets]\napiEnabled = Off\n", false),
            ("[org.freedesktop.secrets]\napiEnabled=false\n[org.freedesktop.secrets]\napiEnabled=1\n", true),
        ] as [(String, Bool?)] {
            try text.write(to: home.appendingPathComponent("kwalletrc"), atomically: true, encoding: .utf8)
            #expect(KWalletOnBus.apiEnabled(environment: environment) == expected, "\(text)")
        }
    }

    @Test("an encrypted session fails while a plain one works: the fix is KWallet's QCA plugin")
    func missingQCAPlugin() {
        var probe = status(
            reachable: false, provider: nil, collection: false,
            problem: .serviceFailure(domain: "g-dbus-error-quark", code: 16, message: "createDLGroup failed: maybe libqca-ossl is missing"))
        probe.plainSessionWorks = true
        let checks = Doctor.keyringChecks(probe, environment: busEnv)
        #expect(checks.map(\.ok) == [true, false, false, false])
        #expect(checks[1].detail.contains("unencrypted"), "\(checks[1])")
        #expect(checks[1].hint?.contains("libqca-qt5-2-plugins") == true, "\(checks[1])")
        probe.plainSessionWorks = false
        #expect(Doctor.keyringChecks(probe, environment: busEnv)[1].hint?.contains("QCA") == false)
    }

    @Test(
        "a failed key exchange names the QCA package and the daemon of the provider's Qt generation",
        arguments: [
            ("kwalletd6", "libqca-qt6-plugins", "restart kwalletd6"), ("kwalletd5", "libqca-qt5-2-plugins", "restart kwalletd5"),
        ])
    func keyExchangeFailedNamesPackage(daemon: String, package: String, restart: String) {
        var probe = status(
            reachable: false, provider: nil, collection: false,
            problem: .keyExchangeFailed(provider: daemon, detail: "createDLGroup failed: maybe libqca-ossl is missing"))
        probe.plainSessionWorks = true
        let checks = Doctor.keyringChecks(probe, environment: busEnv)
        #expect(checks.map(\.ok) == [true, false, false, false])
        #expect(checks[1].detail.hasPrefix("\(daemon) (KWallet) opens only unencrypted sessions"), "\(checks[1])")
        #expect(checks[1].hint?.contains(package) == true, "\(checks[1])")
        #expect(checks[1].hint?.hasSuffix(restart) == true, "\(checks[1])")
        #expect(Doctor.exitStatus(checks) == .unavailable)
        let error = KeyringError.keyExchangeFailed(provider: daemon, detail: "createDLGroup failed")
        #expect(error.description.contains(package) && error.description.hasSuffix(restart), "\(error)")
        #expect(ExitCode(error) == .unavailable)
    }

    @Test("no Secret Service passes the bus check only and exits 69")
    func noService() {
        let checks = Doctor.keyringChecks(
            status(reachable: false, provider: nil, collection: false, problem: .noSecretService), environment: busEnv)
        #expect(checks.map(\.ok) == [true, false, false, false])
        #expect(Doctor.exitStatus(checks) == .unavailable)
    }

    @Test("no default collection exits 69")
    func noCollection() {
        let checks = Doctor.keyringChecks(status(collection: false, problem: .noDefaultCollection), environment: busEnv)
        #expect(checks.map(\.ok) == [true, true, false, false])
        #expect(Doctor.exitStatus(checks) == .unavailable)
    }

    @Test("a locked keyring alone exits 75")
    func locked() {
        let checks = Doctor.keyringChecks(status(locked: true, problem: .locked(itemExists: false)), environment: busEnv)
        #expect(checks.map(\.ok) == [true, true, true, false])
        #expect(Doctor.exitStatus(checks) == .temporaryFailure)
        #expect(Doctor.text(checks).contains("FAIL default collection unlocked: locked\n    fix: "))
    }

    @Test("a locked keyring plus a failing identity check exits 69")
    func lockedPlusOther() {
        let checks = Doctor.keyringChecks(status(locked: true, problem: .locked(itemExists: false)), environment: busEnv)
            + [.fail("backup dir", "not writable", hint: "fix permissions")]
        #expect(Doctor.exitStatus(checks) == .unavailable)
    }

    @Test("a timeout exits 75")
    func timeout() {
        let checks = Doctor.keyringChecks(
            status(reachable: false, provider: nil, collection: false, problem: .timedOut(seconds: 2)), environment: busEnv)
        #expect(checks[1].detail == "did not answer within 2 s")
        #expect(Doctor.exitStatus(checks) == .temporaryFailure)
    }

    @Test("--json has the stable schema: ok, then checks with name, ok, detail, hint")
    func json() throws {
        let checks = Doctor.keyringChecks(status(locked: true, problem: .locked(itemExists: false)), environment: busEnv)
        let text = Doctor.json(checks)
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["ok", "checks"])
        #expect(object["ok"] as? Bool == false)
        let list = try #require(object["checks"] as? [[String: Any]])
        #expect(list.count == 4)
        for item in list { #expect(Set(item.keys) == ["name", "ok", "detail", "hint"]) }
        #expect(list[0]["hint"] is NSNull)
        #expect(list[3]["hint"] as? String != nil)
        #expect(text.hasPrefix(#"{"ok":false,"checks":[{"name":"session bus","ok":true,"detail":"#))
    }

    @Test("KeePassXC: doctor explains the exposed group, UnlockBeforeSearch and the confirmations, from keepassxc.ini or its defaults")
    func keePassXCSettings() {
        let defaults = Doctor.keePassXCCheck(ini: nil, path: "/x/keepassxc.ini")
        #expect(defaults.ok && defaults.name == "keepassxc settings")
        for fragment in ["exposed to the Secret Service", "UnlockBeforeSearch=true (default)", "ConfirmAccessItem=true (default)",
                         "ConfirmDeleteItem=true (default)", "[no /x/keepassxc.ini]"] {
            #expect(defaults.detail.contains(fragment), "\(defaults.detail)")
        }
        let ini = "[General]\nUnlockBeforeSearch=true\n\n[FdoSecrets]\nEnabled=true\nUnlockBeforeSearch=false\nConfirmAccessItem=False\n"
        let set = Doctor.keePassXCCheck(ini: ini, path: "/x/keepassxc.ini")
        #expect(set.detail.contains("UnlockBeforeSearch=false: locked databases are reported at once"), "\(set.detail)")
        #expect(set.detail.contains("ConfirmAccessItem=false: reads need no click"))
        #expect(set.detail.contains("ConfirmDeleteItem=true (default)"))
        #expect(!Doctor.text([set]).contains("\n    fix:"))
    }
}
