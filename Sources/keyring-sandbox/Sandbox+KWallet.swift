// KWallet as the provider, ported from scripts/providers/kwallet.sh: kwalletd6 or kwalletd5,
// headless (Qt offscreen), its wallet created and opened with no dialog through
// org.kde.KWallet.pamOpen (the call pam_kwallet makes) from a hash of the EMPTY password, so that
// every later unlock succeeds silently. Never CreateCollection: kwalletd answers it with a "new
// wallet" dialog whose prompt never completes.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Sandbox {
    private static let wallet = "kdewallet"

    func startKWallet() throws(SandboxFailure) {
        let daemon = programs["kwalletd6"] != nil ? "kwalletd6" : "kwalletd5"
        let daemonPath = programs[daemon, default: daemon]
        providerLog = daemon + ".log"
        let config = environment["XDG_CONFIG_HOME", default: root + "/home/.config"]
        let walletDir = environment["XDG_DATA_HOME", default: root + "/home/.local/share"] + "/kwalletd"
        do {
            // The bus may start the daemon too (kwalletd6 owns org.kde.kwalletd5 as well, and the
            // library flushes the wallet through that name): these are its only service files.
            for name in ["org.freedesktop.secrets", "org.kde.kwalletd5", "org.kde." + daemon] {
                try "[D-BUS Service]\nName=\(name)\nExec=/usr/bin/env QT_QPA_PLATFORM=offscreen \(daemonPath)\n".write(
                    toFile: root + "/bus/services/\(name).service", atomically: true, encoding: .utf8)
            }
            try FileManager.default.createDirectory(atPath: walletDir, withIntermediateDirectories: true)
            chmod(walletDir, 0o700)
            // No first-use wizard, one wallet, never closed on idle, never a prompt; the Secret
            // Service API on.
            try """
            [Wallet]
            Enabled=true
            First Use=false
            Default Wallet=\(Self.wallet)
            Use One Wallet=true
            Close When Idle=false
            Prompt on Open=false
            Launch Manager=false
            Leave Open=true

            [org.freedesktop.secrets]
            apiEnabled=true

            """.write(toFile: config + "/kwalletrc", atomically: true, encoding: .utf8)
            var salt = [UInt8](repeating: 0, count: 56)
            let random = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            if random >= 0 {
                _ = read(random, &salt, salt.count)
                close(random)
            }
            try Data(salt).write(to: URL(fileURLWithPath: walletDir + "/\(Self.wallet).salt"))
        } catch {
            throw SandboxFailure(status: 73, message: "cannot write KWallet's files: \(error)")
        }
        var daemonEnvironment = environment
        daemonEnvironment["QT_QPA_PLATFORM"] = "offscreen"

        // 1. Create the wallet with pamOpen (sent expecting a reply: sent NoReply, as declared, it
        //    created no wallet), then stop: kwalletd turns wallets into collections only at start-up.
        providerPID = try start(daemon, [], environment: daemonEnvironment, stdin: nil, log: providerLog)
        try waitUntil("\(daemon) takes org.freedesktop.secrets") { hasOwner("org.freedesktop.secrets") }
        // pamOpen's argument: PBKDF2-HMAC-SHA512 of the empty password, 50,000 iterations, 56
        // bytes, salted with the wallet's salt file.
        let hash = capture(
            "python3",
            [
                "-c",
                """
                import hashlib, sys
                salt = open(sys.argv[1], "rb").read()
                print(",".join(str(b) for b in hashlib.pbkdf2_hmac("sha512", b"", salt, 50000, 56)))
                """,
                walletDir + "/\(Self.wallet).salt",
            ])
        guard hash.status == 0 else { throw SandboxFailure(status: 70, message: "python3 could not hash the wallet's password") }
        let opened = dbusSend([
            "--dest=org.kde.\(daemon)", "/modules/\(daemon)", "org.kde.KWallet.pamOpen", "string:\(Self.wallet)",
            "array:byte:" + hash.reply.trimmingCharacters(in: .whitespacesAndNewlines), "int32:0",
        ])
        guard opened.status == 0 else { throw SandboxFailure(status: 70, message: "\(daemon) refused pamOpen: \(logText(providerLog))") }
        try waitUntil("\(daemon) creates the wallet") { FileManager.default.fileExists(atPath: walletDir + "/\(Self.wallet).kwl") }
        stopGroup(providerPID)
        providerPID = 0
        try waitUntil("\(daemon) releases org.freedesktop.secrets") { !hasOwner("org.freedesktop.secrets") }

        // 2. Start it again and unlock through the Secret Service: Unlock returns a prompt, which
        //    with the empty password completes with no dialog.
        providerPID = try start(daemon, [], environment: daemonEnvironment, stdin: nil, log: providerLog)
        try waitUntil("\(daemon) takes org.freedesktop.secrets again") { hasOwner("org.freedesktop.secrets") }
        let collection = "/org/freedesktop/secrets/collection/\(Self.wallet)"
        let unlock = dbusSend([
            "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Unlock",
            "array:objpath:\(collection)",
        ])
        let prompt = unlock.reply.split(separator: "\n").last { $0.contains("object path \"") }?.split(separator: "\"").dropFirst().first
        if let prompt, prompt != "/" {
            _ = dbusSend(["--dest=org.freedesktop.secrets", String(prompt), "org.freedesktop.Secret.Prompt.Prompt", "string:"])
        }
        try waitUntil("the wallet is unlocked") {
            let locked = dbusSend([
                "--dest=org.freedesktop.secrets", collection, "org.freedesktop.DBus.Properties.Get",
                "string:org.freedesktop.Secret.Collection",
                "string:Locked",
            ])
            return locked.status == 0 && locked.reply.contains("boolean false")
        }
    }
}
