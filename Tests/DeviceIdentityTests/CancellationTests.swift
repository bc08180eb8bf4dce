// Async resolver calls against a hung (SIGSTOPped) gnome-keyring: task cancellation ends them.
import Foundation
import Keyring
import TestSupport
import Testing
@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

@Suite("Resolver cancellation against a hung keyring", .serialized, .needs(.secretService))
struct CancellationTests {
    @Test("cancelling the task of an async resolve on a hung daemon throws cancelled, and nothing is generated")
    func cancelledResolveGeneratesNothing() async throws {
        try requireTestKeyring()
        let fixture = try Fixture()
        // A 60 s budget: only cancellation can end these calls early; a timeout would show as timedOut.
        let resolver = try IdentifierResolver(
            scope: .app(fixture.appID), keyring: Keyring(timeout: .seconds(60)), backup: .directory(fixture.backupDirectory),
            lockDirectories: [fixture.directory + "/lock"])
        let warm = try await resolver.refresh().value   // connected, session open
        try FileManager.default.removeItem(atPath: fixture.backupPath)
        let paused = try PausedDaemon()
        defer { paused.resume() }

        let resolve = Task { try await resolver.refresh() }
        let reset = Task { try await resolver.reset() }
        try? await Task.sleep(for: .milliseconds(300))   // let the calls start; not an assertion
        resolve.cancel()
        reset.cancel()
        do {
            _ = try await resolve.value
            Issue.record("a cancelled resolve returned a value")
        } catch let error as IdentityError {
            #expect(error == .keyring(.cancelled), "\(error)")
        }
        do {
            try await reset.value
            Issue.record("a cancelled reset succeeded")
        } catch let error as IdentityError {
            #expect(error == .keyring(.cancelled), "\(error)")
        }
        paused.resume()
        #expect(!FileManager.default.fileExists(atPath: fixture.backupPath), "nothing generated")
        #expect(try await resolver.refresh().value == warm, "the identifier survived")
    }
}
