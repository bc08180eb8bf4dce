#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// idtool's whole run, from `argv` to the exit status. It lives in the `idtool` module, which the
/// test targets import; the `idtool` executable (Sources/idtool/Executable) only calls it. That
/// split lets the executable alone link the Swift runtime statically (see Package.swift).
package enum EntryPoint {
    /// Parses the command line, runs the command and returns the exit status. Errors are reported
    /// by the runners as one line on stderr.
    package static func run() -> Int32 {
        do throws(UsageError) {
            let (arguments, notUTF8) = CommandLineParser.decodedArguments()
            let command = try CommandLineParser.parse(arguments, appFromEnvironment: Environment.value("IDTOOL_APP"))
            try CommandLineParser.rejectNonUTF8(command, notUTF8)
            switch command {
            case .help(let topic):
                Output.print(Usage.text(for: topic))
                return ExitCode.ok.rawValue
            case .version:
                Output.print(Usage.version + "\n")
                return ExitCode.ok.rawValue
            case .generate(.man):
                Output.print(ManPage.text)
                return ExitCode.ok.rawValue
            case .generate(.completion(let shell)):
                Output.print(Completion.script(for: shell))
                return ExitCode.ok.rawValue
            case .generate(.reference):
                Output.print(Reference.text)
                return ExitCode.ok.rawValue
            case .get, .show, .reset, .migrate, .derive:
                return IdentityCommands.run(command)
            case .doctor(let json, let timeout):
                return Doctor.run(json: json, timeout: timeout, environment: ProcessInfo.processInfo.environment)
            case .itemGet, .itemSet, .itemReset, .itemList, .itemWatch:
                return ItemCommands.run(command)
            case .lock, .unlock:
                return LockCommands.run(command)
            }
        } catch {
            return Output.fail(error)
        }
    }
}
