// What a keyring call threw, for tests that expect a KeyringError.
import Keyring
import Testing

/// The KeyringError `body` throws; records an issue when it returns or throws something else.
public func keyringError<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) -> KeyringError? {
    do {
        let value = try body()
        Issue.record("expected a KeyringError, but the call returned \(value)", sourceLocation: sourceLocation)
    } catch let error as KeyringError {
        return error
    } catch {
        Issue.record("expected a KeyringError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The KeyringError the async `body` throws; records an issue when it returns or throws something else.
public func keyringError<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async -> KeyringError? {
    do {
        let value = try await body()
        Issue.record("expected a KeyringError, but the call returned \(value)", sourceLocation: sourceLocation)
    } catch let error as KeyringError {
        return error
    } catch {
        Issue.record("expected a KeyringError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
