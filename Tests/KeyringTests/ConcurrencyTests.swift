import Dispatch
import Foundation
import Keyring
import TestSupport
import Testing

@Suite("One SecretStore shared by many threads")
struct ConcurrencyTests {
    @Test("16 threads reading and writing one SecretStore all succeed and leave exactly one item")
    func manyThreadsOneItem() throws {
        try requireTestKeyring()
        let id = uniqueID("threads")
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        let failures = Guarded<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            do {
                try store.setObject("value-\(i)", forKey: .valueData)
                try store.setObject("account-\(i)", forKey: .account)
                let value = try store.object(forKey: .valueData)
                if value?.hasPrefix("value-") != true { failures.withLock { $0.append("thread \(i) read \(String(describing: value))") } }
                let account = try store.object(forKey: .account)
                if account?.hasPrefix("account-") != true { failures.withLock { $0.append("thread \(i) read account \(String(describing: account))") } }
            } catch {
                failures.withLock { $0.append("thread \(i): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try items(service: id).count == 1)
        #expect(try secretToolCount(service: id) == 1)
        #expect(try store.object(forKey: .valueData)?.hasPrefix("value-") == true)
    }

    @Test("16 tasks using the async API on one SecretStore all succeed and leave exactly one item")
    func manyTasksOneItem() async throws {
        try requireTestKeyring()
        let id = uniqueID("tasks")
        let store = try SecretStore(identifier: id)
        let failures = await withTaskGroup(of: String?.self) { group in
            for i in 0..<16 {
                group.addTask {
                    do {
                        try await store.setObject("value-\(i)", forKey: .valueData)
                        let value = try await store.object(forKey: .valueData)
                        return value?.hasPrefix("value-") == true ? nil : "task \(i) read \(String(describing: value))"
                    } catch {
                        return "task \(i): \(error)"
                    }
                }
            }
            var failures: [String] = []
            for await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        #expect(failures == [])
        #expect(try items(service: id).count == 1)
        try await store.reset()
    }
}
