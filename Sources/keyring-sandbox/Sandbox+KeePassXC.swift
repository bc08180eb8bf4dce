// KeePassXC as the provider, ported from scripts/providers/keepassxc.sh: headless (Qt offscreen),
// on a throwaway database whose group "Secret Service" is exposed, with every confirmation dialog
// off (nobody could answer one).
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Sandbox {
    func startKeePassXC() throws(SandboxFailure) {
        let dir = root + "/keepassxc"
        let database = dir + "/keyring.kdbx"
        providerLog = "keepassxc.log"
        let config = environment["XDG_CONFIG_HOME", default: root + "/home/.config"] + "/keepassxc"
        do {
            for path in [dir + "/tmp", config] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            chmod(dir, 0o700)
            // No save after every change and none on exit: the database is thrown away.
            try """
            [General]
            SingleInstance=false
            AutoSaveAfterEveryChange=false
            AutoSaveOnExit=false
            RememberLastDatabases=false
            OpenPreviousDatabasesOnStartup=false

            [GUI]
            CheckForUpdates=false

            [FdoSecrets]
            Enabled=true
            ShowNotification=false
            ConfirmAccessItem=false
            ConfirmDeleteItem=false
            UnlockBeforeSearch=false

            """.write(toFile: config + "/keepassxc.ini", atomically: true, encoding: .utf8)
            try Self.databaseXML.write(toFile: dir + "/keyring.xml", atomically: true, encoding: .utf8)
        } catch {
            throw SandboxFailure(status: 73, message: "cannot write KeePassXC's files: \(error)")
        }
        // -t 100: the shortest key derivation keepassxc-cli allows, so that opening stays quick.
        let importer = try start(
            "keepassxc-cli", ["import", "-q", "-p", "-t", "100", dir + "/keyring.xml", database], environment: environment,
            stdin: password + "\n" + password + "\n", log: providerLog)
        let imported = wait(importer)
        guard imported == 0 else {
            throw SandboxFailure(status: 70, message: "keepassxc-cli import failed (\(imported)): \(logText(providerLog))")
        }
        // Its single-instance lock and sockets live in TMPDIR: keep them in the sandbox too.
        var daemonEnvironment = environment
        daemonEnvironment["TMPDIR"] = dir + "/tmp"
        daemonEnvironment["QT_QPA_PLATFORM"] = "offscreen"
        providerPID = try start("keepassxc", [], environment: daemonEnvironment, stdin: nil, log: providerLog)
        // Started with no database, then told to open one over its own interface: KeePassXC 2.7.10
        // (Debian 13) started headless with `--pw-stdin DB` segfaults; 2.7.4 takes either way.
        try waitUntil("KeePassXC takes org.keepassxc.KeePassXC.MainWindow") { hasOwner("org.keepassxc.KeePassXC.MainWindow") }
        try waitUntil("KeePassXC takes org.freedesktop.secrets") { hasOwner("org.freedesktop.secrets") }
        let opened = dbusSend([
            "--dest=org.keepassxc.KeePassXC.MainWindow", "/keepassxc", "org.keepassxc.KeePassXC.MainWindow.openDatabase",
            "string:\(database)", "string:\(password)", "string:",
        ])
        guard opened.status == 0 else {
            throw SandboxFailure(status: 70, message: "KeePassXC did not open its database: \(logText(providerLog))")
        }
        // It owns the name before the database is open; a write in that gap would get a dialog.
        try waitUntil("KeePassXC's database is unlocked") {
            let locked = dbusSend([
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets/aliases/default", "org.freedesktop.DBus.Properties.Get",
                "string:org.freedesktop.Secret.Collection", "string:Locked",
            ])
            return locked.status == 0 && locked.reply.contains("boolean false")
        }
    }

    /// A database whose group "Secret Service" is exposed (FDO_SECRETS_EXPOSED_GROUP); fixed UUIDs.
    private static let databaseXML = """
        <?xml version="1.0" encoding="utf-8" standalone="yes"?>
        <KeePassFile>
         <Meta>
          <DatabaseName>keyring</DatabaseName>
          <CustomData>
           <Item><Key>FDO_SECRETS_EXPOSED_GROUP</Key><Value>{6b657972-696e-6749-6465-6e7469747931}</Value></Item>
          </CustomData>
         </Meta>
         <Root>
          <Group>
           <UUID>a2V5cmluZ0lkZW50aXR5MA==</UUID>
           <Name>keyring</Name>
           <Group><UUID>a2V5cmluZ0lkZW50aXR5MQ==</UUID><Name>Secret Service</Name></Group>
          </Group>
         </Root>
        </KeePassFile>

        """
}
