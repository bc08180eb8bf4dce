// The identifier rule checked over every order of events (DocC "The identifier's rules"), in
// process: the real IdentifierResolver on a memory keyring and real state directories, no daemon.
// Every sequence of the events below up to `depth` is run, each from the world its prefix left
// (snapshots put it back), and each get is checked against the rule:
// - an identifier never changes silently;
// - locked, unreachable, timed out and damaged never count as absent;
// - after a reset that completed, the next get in every environment gives one new identifier,
//   the same in each, with no block;
// - every error names an action, and after that action the next get succeeds.
import Foundation
import Keyring
import KeyringTesting
import TestSupport
import Testing

@testable import DeviceIdentity

#if canImport(Glibc)
import Glibc
#endif

/// One thing that can happen to a scope's stores.
enum Event: Hashable, CustomStringConvertible {
    /// `resolve()`: reads, repairs, creates.
    case get(Place)
    /// `dryRun()` (`idtool show`): reads only.
    case read(Place)
    case reset(Place)
    /// A desktop reset killed after its n-th durable step.
    case resetKilled(afterStep: Int)
    /// A desktop get killed after its n-th durable step (a first run, a restore, a repair).
    case getKilled(afterStep: Int)
    /// The desktop's backup cut short in place (a disk fault): the same file, its birth kept.
    case damageBackup
    /// The desktop's backup replaced by a corrupt file, a new one (an editor, a sync tool): for all
    /// the resolver can tell, written after any reset before it.
    case replaceBackup
    case removeBackup
    /// The desktop's last intact backup put back as a new file (a restore from the user's backups).
    case restoreBackup
    /// Another client deletes the identity item.
    case removeItem
    case keyring(Condition)
    /// The daemon acknowledged the last event's keyring changes and lost them in a restart.
    case keyringLosesLastChange

    /// Where the event happens: the sandbox's own calls there, everything else on the desktop.
    var place: Place {
        switch self {
        case .get(let place), .read(let place), .reset(let place): place
        default: .desktop
        }
    }

    var description: String {
        switch self {
        case .get(let place): "get(\(place))"
        case .read(let place): "read(\(place))"
        case .reset(let place): "reset(\(place))"
        case .resetKilled(let step): "reset(desktop) killed after step \(step)"
        case .getKilled(let step): "get(desktop) killed after step \(step)"
        case .damageBackup: "backup damaged"
        case .replaceBackup: "backup replaced by a corrupt file"
        case .removeBackup: "backup removed"
        case .restoreBackup: "backup restored"
        case .removeItem: "keyring item removed"
        case .keyring(let condition): "keyring \(condition)"
        case .keyringLosesLastChange: "the keyring lost the last change"
        }
    }

    /// Kills after each step up to these; a call with more steps than that is reported, so no
    /// kill point goes unchecked. A kill after a call's last step is the call itself, not run again.
    static let resetSteps = 8
    static let getSteps = 8

    static let all: [Event] =
        [.get(.desktop), .get(.sandbox), .read(.desktop), .reset(.desktop), .reset(.sandbox)]
        + (1...resetSteps).map { .resetKilled(afterStep: $0) } + (1...getSteps).map { .getKilled(afterStep: $0) }
        + [.damageBackup, .replaceBackup, .removeBackup, .restoreBackup, .removeItem]
        + [Condition.normal, .locked, .unreachable, .timedOut].map { .keyring($0) } + [.keyringLosesLastChange]
}

/// What the rule needs to remember of the events so far. A value: the search copies it per branch.
struct Ledger {
    var events: [Event] = []
    /// The identifier last handed out by a get, in any environment.
    var handedOut: String?
    /// A reset was asked for since `handedOut`: one change is expected.
    var changeAllowed = false
    /// Made with no keyring ever seen (headless): the keyring's value may overrule it, reported.
    var provisional: Set<String> = []
    /// The provisional value a place's last get handed out.
    var provisionalHandedOut: [Place: String] = [:]
    /// Made by a get that could see no copy of a live identifier (another client removed them all):
    /// a new identifier is what the rule gives there, whichever later get hands it out.
    var madeAfterEveryCopyWasGone: Set<String> = []
    /// When each value first appeared in any store or answer (an index into `events`).
    var firstSeen: [String: Int] = [:]
    /// Resets that reached the keyring (theirs or a later get's completion), by event index.
    var completedResets: [Int] = []
    /// A reset recorded next to a place's backup, not yet in the keyring.
    var pendingReset: [Place: Int] = [:]
    /// What each damaged file (by inode) held when it was damaged; nil when no one can tell (a
    /// corrupt file written whole in its place).
    var damaged: [UInt64: String?] = [:]
    /// The desktop's last intact backup file, for `restoreBackup`.
    var savedBackup: Data?
    /// The keyring before the last event that changed it, and the resets that event completed,
    /// with where each was made.
    var keyringBeforeLastChange: MemoryKeyring.Snapshot?
    var resetsCompletedByLastChange: [(index: Int, place: Place)] = []
    /// Completed resets the keyring lost, with where each was made: only there can a get know of it,
    /// until a get there succeeds and makes it again.
    var lostResets: [(index: Int, place: Place)] = []

    /// No reset that `place` knows of came after the value first appeared: it may be the live identifier.
    func mayBeLive(_ value: String, at place: Place) -> Bool {
        guard let seen = firstSeen[value] else { return true }
        let known = completedResets + (pendingReset[place].map { [$0] } ?? [])
        return !known.contains { $0 > seen }
    }

    /// A reset that completed came after the value first appeared: it must never be handed out again
    /// at `place`. A reset the keyring lost voids it only where it was made.
    func isVoided(_ value: String, at place: Place) -> Bool {
        guard let seen = firstSeen[value] else { return false }
        return completedResets.contains { index in
            index > seen && !lostResets.contains { $0.index == index && $0.place != place }
        }
    }
}

final class EventOrderCheck {
    let world: World
    var ledger = Ledger()
    var violations: [String] = []
    var sequences = 0
    var gets = 0
    var remediesFollowed = 0

    init() throws { world = try World() }

    func violation(_ what: String) {
        if violations.count < 40 { violations.append("\(what)\n    after: \(ledger.events.map(\.description).joined(separator: ", "))") }
    }

    /// Every value the stores hold now gets its first-seen index.
    func noteStores() {
        var values = world.keyringValues
        for place in Place.allCases { if let value = world.backupValue(place) { values.append(value) } }
        for value in values where ledger.firstSeen[value] == nil { ledger.firstSeen[value] = ledger.events.count - 1 }
    }

    /// A pending reset whose mark is gone was completed by the call that just ran there.
    func noteResetCompletion(_ place: Place) {
        if let index = ledger.pendingReset[place], access(world.pendingResetPath(place), F_OK) != 0 {
            ledger.completedResets.append(index)
            ledger.pendingReset[place] = nil
        }
    }

    // MARK: Gets and their check

    /// One get in `place`, checked. Returns the error it ended with, if any.
    @discardableResult
    func get(_ place: Place, counter: StepCounter? = nil) -> IdentityError? {
        gets += 1
        let result = noticingNewValues(at: place) {
            Result { () throws(IdentityError) in try world.resolver(place, counter: counter).resolve() }
        }
        switch result {
        case .success(let resolution):
            check(resolution, at: place)
            // This environment's completed resets are back in the keyring (made again if it lost them).
            ledger.lostResets.removeAll { $0.place == place }
            return nil
        case .failure(let error):
            check(error, at: place)
            return error
        }
    }

    /// The values that may be the live identifier in the stores `place` reads: the keyring (whatever
    /// its condition), its backup and the damaged copies there.
    func liveCopies(visibleFrom place: Place) -> [String] {
        var values = world.keyringValues + (world.backupValue(place).map { [$0] } ?? [])
        values += world.backupInodes(place).compactMap { ledger.damaged[$0] ?? nil }
        return values.filter { ledger.mayBeLive($0, at: place) }
    }

    /// Runs a call in `place`; when no store it reads held a copy of a live identifier before, the
    /// values it put into the stores count as made anew.
    func noticingNewValues<T>(at place: Place, _ body: () -> T) -> T {
        let everyCopyGone = liveCopies(visibleFrom: place).isEmpty
        let known = Set(ledger.firstSeen.keys)
        let result = body()
        noteResetCompletion(place)
        noteStores()
        if everyCopyGone { ledger.madeAfterEveryCopyWasGone.formUnion(Set(ledger.firstSeen.keys).subtracting(known)) }
        return result
    }

    func check(_ resolution: Resolution, at place: Place) {
        let value = resolution.value
        if ledger.firstSeen[value] == nil { ledger.firstSeen[value] = ledger.events.count - 1 }
        // While the keyring cannot be asked, the backup serves, degraded: it cannot know of a reset
        // made elsewhere until the keyring answers (DocC "The identifier's rules").
        let servedWithoutKeyring = resolution.provenance == .backup && resolution.isDegraded
        if ledger.isVoided(value, at: place) && !servedWithoutKeyring {
            violation("get(\(place)) handed out an identifier a completed reset voided")
        }
        // The rule's one documented exception: where no keyring ever served this environment, a new
        // identifier lives in its backup alone (degraded), and the keyring's value overrules it later,
        // reported. It is not the identifier until the keyring holds it.
        var headless = false
        switch resolution.keyringProblem {
        case .noSecretService?, .noSessionBus?: headless = !resolution.storedIn.contains(.keyring)
        default: break
        }
        if headless && (ledger.provisional.contains(value) || resolution.provenance == .generated(policy: "randomUUID")) {
            ledger.provisional.insert(value)
            ledger.provisionalHandedOut[place] = value
            return
        }
        if let provisional = ledger.provisionalHandedOut[place], provisional != value, resolution.conflicts.isEmpty {
            violation("get(\(place)) overruled the identifier it made without a keyring, and did not report it")
        }
        ledger.provisionalHandedOut[place] = nil
        if let previous = ledger.handedOut, previous != value {
            if !ledger.changeAllowed && !ledger.madeAfterEveryCopyWasGone.contains(value) {
                violation("get(\(place)) changed the identifier silently (provenance \(resolution.provenance))")
            }
            ledger.changeAllowed = false
        }
        ledger.handedOut = value
        ledger.provisional.remove(value)
    }

    /// The action an error names, as the events that carry it out, and the words it must say.
    static func remedy(for error: IdentityError, at place: Place) -> (events: [Event], says: String)? {
        switch error {
        case .backupCorrupt: return ([.reset(place)], "run reset")
        case .keyringUnreachable: return ([.keyring(.normal)], "start or unlock the keyring")
        case .keyring(.locked): return ([.keyring(.normal)], "unlock it")
        case .keyring(.timedOut): return ([.keyring(.normal)], "check that the keyring daemon is responsive")
        case .keyring(.invalidArgument(let why)) where why.contains("run reset"): return ([.reset(place)], "run reset")
        default: return nil
        }
    }

    func check(_ error: IdentityError, at place: Place) {
        switch error {
        case .keyring(.locked), .keyring(.timedOut), .keyringUnreachable, .keyring(.noSecretService):
            if world.condition == .normal { violation("get(\(place)) failed on a keyring that answers: \(error)") }
        case .backupCorrupt:
            // Legitimate only while a damaged copy there may hold the live identifier.
            // A corrupt file written whole after a reset may be a newer identifier's, as far as anyone can tell.
            let copies = world.backupInodes(place).compactMap { ledger.damaged[$0] }
            if !copies.contains(where: { $0.map { ledger.mayBeLive($0, at: place) } ?? true }) {
                violation("get(\(place)) blocked on a damaged backup that holds only a reset identifier: \(error)")
            }
        default:
            violation("get(\(place)) failed unexpectedly: \(error)")
        }
        guard let remedy = Self.remedy(for: error, at: place) else {
            violation("get(\(place))'s error names no action this check knows: \(error)")
            return
        }
        if !error.description.contains(remedy.says) {
            violation("get(\(place))'s error does not say \"\(remedy.says)\": \(error)")
        }
    }

    /// After an error, the action it names is taken (and the one the next error names, up to
    /// three): then a get must succeed. Runs on a copy of the world, put back after.
    func followRemedies(from error: IdentityError, at place: Place) {
        let saved = world.snapshot()
        let savedLedger = ledger
        defer {
            world.restore(saved)
            world.discard(saved)
            ledger = savedLedger
        }
        var error = error
        for _ in 0..<3 {
            guard let remedy = Self.remedy(for: error, at: place) else { return }  // reported by check
            remediesFollowed += 1
            for event in remedy.events { takeAction(event) }
            guard let next = get(place) else { return }
            error = next
        }
        violation("get(\(place)) still fails after following its errors' actions three times: \(error)")
    }

    /// An action an error named. A reset that fails in turn names its own action (unlock the
    /// keyring, say): that is taken, and the reset run again.
    func takeAction(_ event: Event) {
        guard case .reset(let place) = event else {
            apply(event)
            return
        }
        for _ in 0..<2 {
            ledger.events.append(event)
            guard let error = reset(place) else { return }
            guard let remedy = Self.remedy(for: error, at: place), !remedy.events.contains(event) else {
                violation("reset(\(place))'s error names no action this check knows: \(error)")
                return
            }
            for next in remedy.events { apply(next) }
        }
    }

    // MARK: Events

    /// Applies `event`, checking what it returns. False when it changes nothing (not run further).
    @discardableResult
    func apply(_ event: Event) -> Bool {
        ledger.events.append(event)
        let keyringBefore = world.memory.snapshot()
        let keyringSignatureBefore = world.keyringSignature
        let completedBefore = ledger.completedResets
        defer {
            if case .keyringLosesLastChange = event {} else if world.keyringSignature != keyringSignatureBefore {
                ledger.keyringBeforeLastChange = keyringBefore
                let place = event.place
                ledger.resetsCompletedByLastChange = ledger.completedResets.filter { !completedBefore.contains($0) }.map { ($0, place) }
            }
        }
        switch event {
        case .get(let place):
            if let error = get(place) { followRemedies(from: error, at: place) }
        case .read(let place):
            let before = world.signature
            let result = Result { () throws(IdentityError) in try world.resolver(place).dryRun() }
            if world.signature != before { violation("read(\(place)) changed a store") }
            if case .success(let resolution) = result, resolution.provenance == .keyring || resolution.provenance == .backup,
                let handed = ledger.handedOut, handed != resolution.value, !ledger.changeAllowed,
                !ledger.provisional.contains(resolution.value), !ledger.madeAfterEveryCopyWasGone.contains(resolution.value)
            {
                violation("read(\(place)) reported another identifier than the one handed out")
            }
        case .reset(let place):
            reset(place)
        case .resetKilled(let step):
            let index = ledger.events.count - 1
            guard world.killed(afterStep: step, { counter in _ = try? world.resolver(.desktop, counter: counter).reset() }) else {
                return false
            }
            if step == Event.resetSteps { violation("a reset has more than \(step) durable steps: raise Event.resetSteps") }
            askedForReset(at: .desktop, index: index)
        case .getKilled(let step):
            let killed = noticingNewValues(at: .desktop) {
                world.killed(afterStep: step) { counter in _ = try? world.resolver(.desktop, counter: counter).resolve() }
            }
            guard killed else { return false }
            if step == Event.getSteps { violation("a get has more than \(step) durable steps: raise Event.getSteps") }
        case .damageBackup:
            let path = world.backupPath(.desktop)
            guard let inode = World.inode(path), ledger.damaged[inode] == nil, let value = world.backupValue(.desktop) else { return false }
            ledger.savedBackup = FileManager.default.contents(atPath: path)
            ledger.damaged[inode] = value
            truncate(path, 7)
        case .replaceBackup:
            let path = world.backupPath(.desktop)
            guard access(world.stateDirectory(.desktop), F_OK) == 0 else { return false }
            if world.backupValue(.desktop) != nil { ledger.savedBackup = FileManager.default.contents(atPath: path) }
            let temporary = path + ".editor"
            FileManager.default.createFile(atPath: temporary, contents: Data("{\"format\":1,".utf8), attributes: [.posixPermissions: 0o600])
            rename(temporary, path)
            if let inode = World.inode(path) { ledger.damaged[inode] = .some(nil) }
        case .removeBackup:
            let path = world.backupPath(.desktop)
            guard access(path, F_OK) == 0 else { return false }
            if world.backupValue(.desktop) != nil { ledger.savedBackup = FileManager.default.contents(atPath: path) }
            unlink(path)
        case .restoreBackup:
            let path = world.backupPath(.desktop)
            guard let saved = ledger.savedBackup, access(path, F_OK) != 0, access(world.stateDirectory(.desktop), F_OK) == 0 else {
                return false
            }
            FileManager.default.createFile(atPath: path, contents: saved, attributes: [.posixPermissions: 0o600])
        case .removeItem:
            let items = world.identityItems
            guard !items.isEmpty else { return false }
            world.withKeyringReachable {
                for item in items {
                    do throws(KeyringError) {
                        try Keyring(memory: world.memory).delete(item: item)
                    } catch {
                        violation("another client's removal of the identity item failed: \(error)")
                    }
                }
            }
        case .keyring(let condition):
            guard condition != world.condition else { return false }
            world.setCondition(condition)
        case .keyringLosesLastChange:
            guard let before = ledger.keyringBeforeLastChange else { return false }
            world.memory.restore(before)
            ledger.keyringBeforeLastChange = nil
            ledger.lostResets += ledger.resetsCompletedByLastChange
            ledger.resetsCompletedByLastChange = []
        }
        noteStores()
        return true
    }

    func askedForReset(at place: Place, index: Int) {
        ledger.changeAllowed = true
        ledger.provisionalHandedOut = [:]  // the reset voids those too
        if access(world.pendingResetPath(place), F_OK) == 0 {
            ledger.pendingReset[place] = index
        } else {
            ledger.completedResets.append(index)
            ledger.pendingReset[place] = nil
        }
    }

    /// A reset, checked; returns its error, if any.
    @discardableResult
    func reset(_ place: Place) -> IdentityError? {
        let index = ledger.events.count - 1
        do throws(IdentityError) {
            try world.resolver(place).reset()
        } catch {
            // Nothing was removed; only a keyring that does not answer normally may refuse.
            if world.condition == .normal { violation("reset(\(place)) failed on a keyring that answers: \(error)") }
            return error
        }
        askedForReset(at: place, index: index)
        guard ledger.pendingReset[place] == nil else { return nil }
        // A completed reset: the next get everywhere, in either order, gives one new identifier, no block.
        for order in [[Place.desktop, .sandbox], [.sandbox, .desktop]] {
            let saved = world.snapshot()
            let savedLedger = ledger
            world.setCondition(.normal)
            let handedBefore = ledger.handedOut
            var values: [String] = []
            for next in order {
                ledger.events.append(.get(next))
                if let error = get(next) {
                    violation("after a completed reset, get(\(next)) blocked: \(error)")
                } else if let value = ledger.handedOut {
                    values.append(value)
                }
            }
            if Set(values).count > 1 { violation("after a completed reset, the environments got different identifiers") }
            if let handedBefore, values.contains(handedBefore) { violation("after a completed reset, the old identifier came back") }
            world.restore(saved)
            world.discard(saved)
            ledger = savedLedger
        }
        return nil
    }

    // MARK: The search

    /// Every sequence of events up to `depth` long, depth first.
    func explore(depth: Int) {
        guard depth > 0 else { return }
        let saved = world.snapshot()
        let savedLedger = ledger
        for event in Event.all {
            startNewMillisecond()
            if apply(event) {
                sequences += 1
                explore(depth: depth - 1)
            }
            world.restore(saved)
            ledger = savedLedger
        }
        world.discard(saved)
    }

    /// Reset records and creation times count in milliseconds: events a millisecond apart, as
    /// any two a user or two processes cause are, keep their order in every record.
    func startNewMillisecond() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        usleep(useconds_t(1000 - (now.tv_nsec / 1000) % 1000))
    }
}

@Suite("The identifier rule over every order of events (memory keyring, real state directories)", .needs(.providerFree))
struct EventOrderTests {
    /// How long the sequences are: every order of up to this many events is checked.
    static let depth = Int(ProcessInfo.processInfo.environment["EVENT_ORDER_DEPTH"] ?? "") ?? 4

    @Test("every order of up to `depth` events keeps the rule")
    func everyOrder() throws {
        let probe = try World()
        try #require(FileTimes.born(probe.root) != nil, "the rule needs files' birth times, and \(probe.root) records none")
        let started = ContinuousClock.now
        // Each first event's subtree in a world of its own, on every core.
        let summaries = Guarded<[(sequences: Int, gets: Int, remedies: Int, violations: [String])]>([])
        DispatchQueue.concurrentPerform(iterations: Event.all.count) { index in
            guard let check = try? EventOrderCheck() else { return }
            check.startNewMillisecond()
            if check.apply(Event.all[index]) {
                check.sequences += 1
                check.explore(depth: Self.depth - 1)
            }
            summaries.withLock { $0.append((check.sequences, check.gets, check.remediesFollowed, check.violations)) }
        }
        let all = summaries.withLock { $0 }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let violations = all.flatMap(\.violations)
        #expect(all.count == Event.all.count, "a world could not be made")
        print(
            "event orders: \(all.map(\.sequences).reduce(0, +)) sequences of up to \(Self.depth) of \(Event.all.count) events, "
                + "\(all.map(\.gets).reduce(0, +)) gets, \(all.map(\.remedies).reduce(0, +)) error actions followed, "
                + "in \(String(format: "%.1f", seconds)) s; \(violations.count) violations")
        for violation in violations.prefix(40) { Issue.record(Comment(rawValue: violation)) }
    }

    /// The events the DocC table's rows name.
    static let vocabulary: [String: Event] = [
        "get": .get(.desktop), "get elsewhere": .get(.sandbox), "damaged": .damageBackup, "reset": .reset(.desktop),
        "reset elsewhere": .reset(.sandbox), "reset killed after its mark": .resetKilled(afterStep: 1),
        "replaced by a corrupt file": .replaceBackup, "item removed": .removeItem, "keyring locked": .keyring(.locked),
    ]

    /// The rows of DocC "A damaged backup and a reset, in every order": events, and the outcome.
    static func documentedCases() throws -> [(events: [String], outcome: String)] {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/DeviceIdentity/Documentation.docc/IdentifierRules.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        guard let start = text.range(of: "<!-- event-order-cases"), let end = text.range(of: "<!-- end of event-order-cases") else {
            return []
        }
        return text[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard line.hasPrefix("|"), cells.count == 2, !cells[0].hasPrefix("-"), cells[0] != "then" else { return nil }
            return (cells[0].components(separatedBy: ", "), cells[1])
        }
    }

    @Test("each order DocC's identifier rules list gives the outcome it states")
    func documentedOrders() throws {
        let cases = try Self.documentedCases()
        #expect(cases.count >= 10, "the article's table was not found")
        for (names, outcome) in cases {
            let check = try EventOrderCheck()
            check.apply(.get(.desktop))
            let first = try #require(check.ledger.handedOut)
            for name in names {
                let event = try #require(Self.vocabulary[name], "the check knows no event \"\(name)\"")
                check.startNewMillisecond()
                check.apply(event)
            }
            check.startNewMillisecond()
            check.ledger.events.append(.get(.desktop))
            let error = check.get(.desktop)
            let seen: String
            switch error {
            case nil: seen = check.ledger.handedOut == first ? "the same identifier" : "a new identifier"
            case .backupCorrupt?: seen = "blocked until reset"
            case .keyring(.locked)?: seen = "locked"
            case let other?: seen = "\(other)"
            }
            #expect(seen == outcome, "\(names.joined(separator: ", ")): \(seen)")
            #expect(check.violations.isEmpty, "\(check.violations)")
        }
    }

    @Test("the check can fail: an order that breaks the rule is reported")
    func checkCanFail() throws {
        let check = try EventOrderCheck()
        check.apply(.get(.desktop))
        // Around the library, as a bug in a write path would: the backup rewritten with another
        // identifier and the keyring item gone, no reset. The backup then serves the other one.
        let other = BackupRecord(scope: check.world.scope, identifier: "someone-else", created: Date(), origin: "test")
        try BackupFile(directory: check.world.stateDirectory(.desktop), scope: check.world.scope).write(other)
        check.apply(.removeItem)
        check.apply(.get(.desktop))
        #expect(check.violations.contains { $0.contains("changed the identifier silently") }, "\(check.violations)")
    }
}
