// In-process benchmark programs for scripts/bench. Every timing is clock_gettime(CLOCK_MONOTONIC).
// Output: one line per sample, "sample <label> <nanoseconds>"; the first call of a process
// (which connects to the bus and opens the session) is labelled "first", later ones "warm".
//
//   keyring-bench read N IDENTIFIER        SecretStore.object(forKey: .valueData), 1 first + N warm
//   keyring-bench write N IDENTIFIER       SecretStore.setObject(_:forKey: .valueData) on an existing item
//   keyring-bench warm-id BATCHES APP      IdentifierResolver.identifier() from memory: ns per call, per batch of 100 000
//   keyring-bench first-id 0 APP           what an app does at launch: IdentifierResolver(appID:) + the first identifier(),
//                                          timed together as "first" (the init alone as "init"); the app's item must exist
//   keyring-bench cold N PREFIX            first-run resolve() of a new app PREFIX-i each time (lock, generate, write keyring + backup)
//   keyring-bench file-read N IDENTIFIER   read, on Keyring(backend: .file) (SECRET_FILE_TEST_PATH/_PASSWORD name the file and key)
//   keyring-bench file-write N IDENTIFIER  write, on Keyring(backend: .file)
//   keyring-bench file-fresh N IDENTIFIER  1 first + N reads, each right after another process (secret-tool store) wrote
//                                          a new value; only the read is timed, and it must return that value
import DeviceIdentity
import Keyring
#if canImport(Glibc)
import Glibc
#endif

@inline(never) func now() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

func sample(_ label: String, _ ns: Int64) { print("sample \(label) \(ns)") }

func fail(_ message: String) -> Never {
    let line = Array("keyring-bench: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}

/// Another process's write: secret-tool (libsecret's own client) stores `value` under the SecretStore item's attributes.
func writeElsewhere(_ name: String, _ value: String) {
    guard let pipe = popen("secret-tool store --label \(name) service \(name) username ''", "w") else { fail("cannot start secret-tool") }
    fputs(value, pipe)
    guard pclose(pipe) == 0 else { fail("secret-tool store failed") }
}

let args = Array(CommandLine.arguments.dropFirst())
guard args.count == 3, let n = Int(args[1]) else {
    fail("usage: keyring-bench read|write|warm-id|first-id|cold|file-read|file-write|file-fresh N NAME")
}
let name = args[2]
// The file-* modes name the backend explicitly rather than relying on SECRET_BACKEND, so they
// measure the file backend even if the environment says otherwise.
// A function, not a global: first-id must not touch Keyring.default before its timer starts.
func keyring() -> Keyring { args[0].hasPrefix("file-") ? Keyring(backend: .file) : Keyring.default }

do {
    switch args[0] {
    case "read", "file-read":
        let store = try SecretStore(identifier: name, keyring: keyring())
        for i in 0...n {
            let t0 = now()
            let value = try store.object(forKey: .valueData)
            let t1 = now()
            guard value != nil else { fail("read found no item for \(name)") }
            sample(i == 0 ? "first" : "warm", t1 - t0)
        }
    case "write", "file-write":
        let store = try SecretStore(identifier: name, keyring: keyring())
        for i in 0...n {
            let value = "value-\(i)-\(now())"
            let t0 = now()
            try store.setObject(value, forKey: .valueData)
            let t1 = now()
            sample(i == 0 ? "first" : "warm", t1 - t0)
        }
    case "file-fresh":
        let store = try SecretStore(identifier: name, keyring: keyring())
        for i in 0...n {
            let value = "fresh-\(i)-\(now())"
            writeElsewhere(name, value)
            let t0 = now()
            let read = try store.object(forKey: .valueData)
            let t1 = now()
            guard read == value else { fail("read a stale value after another process's write") }
            sample(i == 0 ? "first" : "warm", t1 - t0)
        }
    case "warm-id":
        let resolver = try IdentifierResolver(appID: name)
        let t0 = now()
        let first = try resolver.identifier()
        sample("first", now() - t0)
        var sink = 0
        let perBatch = 100_000
        for _ in 0..<n {
            let t0 = now()
            for _ in 0..<perBatch { sink &+= try resolver.identifier().utf8.count }
            let t1 = now()
            print("sample warm \(Double(t1 - t0) / Double(perBatch))")
        }
        if sink != first.utf8.count * n * perBatch { fail("identifier changed while cached") }
    case "first-id":
        // The timer starts before the init, so set-up moved into it would still count.
        let t0 = now()
        let resolver = try IdentifierResolver(appID: name)
        let t1 = now()
        let value = try resolver.identifier()
        let t2 = now()
        guard !value.isEmpty else { fail("empty identifier") }
        sample("first", t2 - t0)
        sample("init", t1 - t0)
    case "cold":
        for i in 0...n {
            let resolver = try IdentifierResolver(appID: "\(name)-\(i)")
            let t0 = now()
            let resolution = try resolver.resolve()
            let t1 = now()
            guard case .generated = resolution.provenance else { fail("app \(name)-\(i) was not new (\(resolution.provenance))") }
            sample(i == 0 ? "first" : "warm", t1 - t0)
        }
    default:
        fail("unknown mode \(args[0])")
    }
} catch {
    fail("\(error)")
}
