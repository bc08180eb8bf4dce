import Dispatch
import Keyring

#if canImport(Glibc)
import Glibc
#endif

/// `idtool item watch`: one line per change of a `SecretStore` item, until SIGINT or SIGTERM.
///
/// An interrupt is how a watch is meant to end, so it exits 0 (a script's `timeout` or `kill` is not
/// a failure); the subscription is cancelled first. A failed first look exits as other item commands do.
enum ItemWatch {
    static func run(identifier: String, group: String?, account: String? = nil, json: Bool, keyring: Keyring) -> Int32 {
        let store: SecretStore
        do throws(KeyringError) {
            store = try SecretStore(identifier: identifier, account: account, accessGroup: group, keyring: keyring)
        } catch {
            return Output.fail(error)
        }
        let status = Guarded<Int32>(ExitCode.ok.rawValue)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            do throws(KeyringError) {
                for await change in try await store.changes() {
                    guard Output.print(line(change, json: json) + "\n") else {
                        Output.error("cannot write to stdout: check where the output goes")
                        status.withLock { $0 = ExitCode.software.rawValue }
                        break
                    }
                }
            } catch .cancelled {
                // Interrupted during the first look.
            } catch {
                let code = Output.fail(error)
                status.withLock { $0 = code }
            }
            done.signal()
        }
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        done.wait()
        for source in sources { source.cancel() }
        return status.withLock { $0 }
    }

    /// `created PATH`, or the `--json` object: keys in a fixed order, null where a kind has none.
    static func line(_ change: KeyringChange, json: Bool) -> String {
        guard json else {
            return [change.kind.rawValue, change.item?.objectPath, change.collection].compactMap { $0 }.joined(separator: " ")
        }
        return JSON.object([
            ("event", .string(change.kind.rawValue)),
            ("path", change.item.map { .string($0.objectPath) } ?? .null),
            ("account", change.item?.attributes["username"].map(JSON.string) ?? .null),
            ("collection", change.collection.map(JSON.string) ?? .null),
        ]).serialized
    }
}
