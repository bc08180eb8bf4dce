import Foundation
import TestSupport
import Testing

/// Whether the QCA OpenSSL plugin is hidden from the KWallet daemon (`scripts/debian trixie --without-qca`
/// mounts an empty directory over Qt's crypto plugin directory and sets this).
private let qcaHidden = ProcessInfo.processInfo.environment["KEYRING_TEST_WITHOUT_QCA"] == "1"

/// A real KWallet daemon without its QCA OpenSSL plugin: every encrypted session fails with
/// "createDLGroup failed". `get` and `doctor` must say which package fixes it for this daemon
/// (kwalletd6: libqca-qt6-plugins; kwalletd5: libqca-qt5-2-plugins) and exit 69, never a bare 70.
@Suite(
    "KWallet without its QCA plugin",
    .enabled(if: TestProvider.isKWallet && qcaHidden, "needs scripts/debian trixie --without-qca (KWallet with its QCA plugin hidden)"))
struct KWalletWithoutQCATests {
    let daemon = TestProvider.kwalletDaemon
    var package: String { daemon == "kwalletd5" ? "libqca-qt5-2-plugins" : "libqca-qt6-plugins" }

    init() throws { try requireTestKeyring() }

    @Test("get exits 69 with one line naming the daemon's QCA package and its restart, and makes no identifier")
    func getNamesThePlugin() throws {
        let app = Idtool.uniqueIdentifier()
        let run = try Idtool.run(["get", "--app", app, "--no-prompt"])
        #expect(run.status == 69, "\(run.status): \(run.stderr)")
        #expect(run.stdout.isEmpty, "no identifier may be printed: \(run.stdoutText)")
        run.expectOneLineError(containing: package)
        #expect(run.stderr.contains("restart \(daemon)"), "\(run.stderr)")
        #expect(run.stderr.contains("(\(daemon))"), "the provider is named: \(run.stderr)")
        // Nothing was minted meanwhile: show still finds no identifier it could print.
        let show = try Idtool.run(["show", "--app", app, "--no-prompt"])
        #expect(show.stdout.isEmpty && show.status != 0, "\(show.status): \(show.stdoutText)")
    }

    @Test("doctor names the daemon, the unencrypted-only sessions, the QCA package and the restart")
    func doctorNamesThePlugin() throws {
        let run = try Idtool.run(["doctor"])
        #expect(run.status == 69, "\(run.stdoutText)\(run.stderr)")
        #expect(
            run.stdoutText.contains("FAIL secret service: \(daemon) (KWallet) opens only unencrypted sessions"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("install \(package)"), "\(run.stdoutText)")
        #expect(run.stdoutText.contains("then restart \(daemon)\n"), "\(run.stdoutText)")
    }
}
