#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

// Parse, run, exit. Errors are reported by the runners as one line on stderr.
let status: Int32
do throws(UsageError) {
    let (arguments, notUTF8) = CommandLineParser.decodedArguments()
    let command = try CommandLineParser.parse(arguments, appFromEnvironment: Environment.value("IDTOOL_APP"))
    try CommandLineParser.rejectNonUTF8(command, notUTF8)
    switch command {
    case .help(let topic):
        Output.print(Usage.text(for: topic))
        status = ExitCode.ok.rawValue
    case .version:
        Output.print(Usage.version + "\n")
        status = ExitCode.ok.rawValue
    case .get, .show, .reset, .migrate, .derive:
        status = IdentityCommands.run(command)
    case .doctor(let json, let timeout):
        status = Doctor.run(json: json, timeout: timeout, environment: ProcessInfo.processInfo.environment)
    case .itemGet, .itemSet, .itemReset:
        status = ItemCommands.run(command)
    }
} catch {
    status = Output.fail(error)
}
exit(status)
