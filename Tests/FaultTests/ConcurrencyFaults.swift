// Concurrency faults: process races on a new app, reset racing get, threads sharing one
// resolver and one SecretStore.
import DeviceIdentity
import Foundation
import Keyring
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults: concurrency", .serialized)
struct ConcurrencyFaults {
    init() throws { try Fault.requireTestKeyring() }

    // The 10-round race against the keyring is IdentityCommandTests.sixteenProcessRace
    // (idtoolTests); this adds the race with no bus, where the flock and the backup alone decide.
    @Test("16 processes racing on a new app with no bus all print the same identifier, 3 rounds")
    func sixteenProcessesNoBus() throws {
        let box = try Sandbox()
        for round in 0..<3 {
            let app = Fault.newApp("race\(round)")
            let children = try (0..<16).map { _ in try box.start(["get", "--app", app], environment: box.noBusEnvironment) }
            let runs = try children.map { try $0.wait() }
            for run in runs { run.expectExit(FaultTable["race.16-processes"]) }
            #expect(Set(runs.map(\.line)).count == 1, "round \(round): \(Set(runs.map(\.line)))")
            #expect(box.backupIdentifier(app) == runs[0].line)
        }
    }

    @Test("reset racing get: every call succeeds, and afterwards keyring and backup agree on one identifier")
    func resetRacingGet() throws {
        let box = try Sandbox()
        let app = Fault.newApp("resetrace")
        _ = try box.establish(app)
        for round in 0..<5 {
            let children = try (0..<12).map { i in try box.start(i % 4 == 0 ? ["reset", "--app", app] : ["get", "--app", app]) }
            let runs = try children.map { try $0.wait() }
            for (i, run) in runs.enumerated() {
                run.expectExit(FaultTable["race.reset-get"])
                if i % 4 != 0 { #expect(Fault.isUUID(run.line), "round \(round): get printed \(run.stdoutText)") }
                run.expectClean(hiding: runs.map(\.line))
            }
            let settled = try box.idtool(["get", "--app", app, "--json"])
            let id = try #require(settled.json?["identifier"] as? String, "\(settled.summary)")
            #expect(try Fault.keyringItemCount(app: app) == 1, "round \(round): exactly one keyring item")
            #expect(try Fault.keyringValue(app: app) == id, "round \(round): keyring holds the settled identifier")
            #expect(box.backupIdentifier(app) == id, "round \(round): backup = keyring")
            #expect(settled.json?["conflicts"] as? [String] == [], "round \(round): settled without conflicts: \(settled.stdoutText)")
        }
    }

    @Test("32 threads share one resolver and one SecretStore: one identifier, every call succeeds, one item")
    func threadsInOneProcess() throws {
        let box = try Sandbox()
        let app = Fault.newApp("threads")
        let resolver = try IdentifierResolver(scope: .app(app), backup: .directory(box.backupDirectory(app)),
                                              lockDirectories: [box.runtimeDir])
        let first = try resolver.resolve().value
        let store = try SecretStore(identifier: "fault.threads.\(UUID().uuidString)")
        let identifiers = Mutex<Set<String>>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            for j in 0..<5 {
                do {
                    let value = j % 2 == 0 ? try resolver.refresh().value : try resolver.identifier()
                    identifiers.withLock { _ = $0.insert(value) }
                    try store.setObject("v\(i)-\(j)", forKey: .valueData)
                    try store.setObject("acct\(i)", forKey: .account)
                    _ = try store.object(forKey: .valueData)
                } catch {
                    failures.withLock { $0.append("\(i)/\(j): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(identifiers.withLock { $0 } == [first], "identifier unchanged across threads")
        #expect(try Keyring.default.search(["service": store.identifier]).count == 1, "one SecretStore item")
        #expect(try Fault.keyringItemCount(app: app) == 1, "one identifier item")
        _ = FaultTable["race.threads"]
        try store.reset()
    }
}
