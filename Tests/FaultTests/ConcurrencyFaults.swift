// Concurrency faults: process races on a new app, reset racing get, threads sharing one
// resolver and one SecretStore.
import DeviceIdentity
import Foundation
import Keyring
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults: concurrency", .serialized, .needs(.secretService))
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

    /// Holds threads until all of them have arrived, so their first calls really overlap.
    final class StartBarrier: @unchecked Sendable {  // the pthread barrier is thread-safe; the pointer never changes
        private let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
        init(count: Int) { pthread_barrier_init(barrier, nil, UInt32(count)) }
        deinit {
            pthread_barrier_destroy(barrier)
            barrier.deallocate()
        }
        func wait() { pthread_barrier_wait(barrier) }
    }

    @Test("32 threads race on a new app through one resolver and one SecretStore: one identifier, every call succeeds, one item each")
    func threadsInOneProcess() throws {
        let box = try Sandbox()
        let app = Fault.newApp("threads")
        // 160 writes queue for one process's service gate: a deadline far above any load, since the
        // test checks the outcome, not the time (25 s ran out beside another CI run).
        let keyring = Keyring(timeout: .seconds(600))
        let resolver = try IdentifierResolver(
            scope: .app(app), keyring: keyring, backup: .directory(box.backupDirectory(app)), lockDirectories: [box.runtimeDir])
        let store = try SecretStore(identifier: "fault.threads.\(UUID().uuidString)", keyring: keyring)
        // Nothing exists yet: the threads' first calls race to make the identifier and the item.
        try #require(try Fault.keyringItemCount(app: app) == 0)
        try #require(box.backupIdentifier(app) == nil)
        try #require(try Keyring.default.search(["service": store.identifier]).isEmpty)

        let threads = 32, rounds = 5
        let barrier = StartBarrier(count: threads)
        let resolutions = Guarded<[Resolution.Provenance]>([])
        let identifiers = Guarded<Set<String>>([])
        let writes = Guarded<Int>(0)
        let failures = Guarded<[String]>([])
        let finished = DispatchGroup()
        for i in 0..<threads {
            finished.enter()
            // Real threads, not concurrentPerform: that runs as many iterations at once as there are cores.
            Thread {
                defer { finished.leave() }
                barrier.wait()
                for j in 0..<rounds {
                    do {
                        let value: String
                        switch j {
                        case 0:
                            let resolution = try resolver.resolve()
                            resolutions.withLock { $0.append(resolution.provenance) }
                            value = resolution.value
                        case let j where j % 2 == 0:
                            let resolution = try resolver.refresh()
                            resolutions.withLock { $0.append(resolution.provenance) }
                            value = resolution.value
                        default:
                            value = try resolver.identifier()
                        }
                        identifiers.withLock { _ = $0.insert(value) }
                        try store.setObject("v\(i)-\(j)", forKey: .valueData)
                        try store.setObject("acct\(i)", forKey: .account)
                        _ = try store.object(forKey: .valueData)
                        writes.withLock { $0 += 1 }
                    } catch {
                        failures.withLock { $0.append("\(i)/\(j): \(error)") }
                    }
                }
            }.start()
        }
        finished.wait()

        #expect(failures.withLock { $0 } == [], "every call succeeds")
        #expect(writes.withLock { $0 } == threads * rounds, "every SecretStore round trip succeeded")
        let provenances = resolutions.withLock { $0 }
        #expect(provenances.count == threads * 3, "every resolve and refresh returned")
        #expect(provenances.filter { $0 == .generated(policy: "randomUUID") }.count == 1,
                "exactly one call made the identifier; the others read it: \(provenances)")
        let seen = identifiers.withLock { $0 }
        #expect(seen.count == 1, "one identifier across threads: \(seen.count) distinct")
        #expect(try Fault.keyringItemCount(app: app) == 1, "one identifier item")
        #expect(try Fault.keyringValue(app: app) == seen.first, "the keyring holds the identifier every thread got")
        #expect(box.backupIdentifier(app) == seen.first, "the backup holds it too")
        #expect(try Keyring.default.search(["service": store.identifier]).count == 1, "one SecretStore item")
        let last = try store.object(forKey: .valueData)
        #expect((0..<threads).contains { i in (0..<rounds).contains { j in last == "v\(i)-\(j)" } }, "the item holds a written value")
        _ = FaultTable["race.threads"]
        try store.reset()
    }
}
