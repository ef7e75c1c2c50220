from intentc.cli import console

console()
