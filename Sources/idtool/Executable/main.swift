import idtool

// Imported here, in the module compiled with -static-stdlib, so that its static libraries' own
// dependencies (_FoundationCShims, _FoundationCollections) are linked too.
#if canImport(FoundationEssentials)
import FoundationEssentials
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

exit(EntryPoint.run())
