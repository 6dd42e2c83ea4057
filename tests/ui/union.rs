use reflector::Reflect;

#[derive(Reflect)]
pub union Widget {
    a: u32,
}

fn main() {}
